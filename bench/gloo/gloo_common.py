"""Helpers the Gloo baseline shares: size parsing and stepping as nccl-tests' flags define them,
a free local port, and nccl-tests' time formatting."""
import socket


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in mult:
        return int(round(float(t[:-1]) * mult[t[-1]]))
    return int(round(float(t)))


def sizes(args):
    s = args.minbytes
    while s <= args.maxbytes:
        yield s
        nxt = int(s * args.stepfactor) if args.stepfactor > 1 else s + args.stepbytes
        if nxt <= s:
            return
        s = nxt


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fmt_time(us):
    return f"{us:.2f}" if us < 1e4 else f"{us:.1f}" if us < 1e6 else f"{us:.0f}"
