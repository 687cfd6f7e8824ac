"""compare.py's --netcluster: the emulated cluster (tools/netcluster) the baselines run across,
described from the topology arguments with netcluster's own defaults (its argument parser is
imported, not copied), and the uplink bound of an AllReduce between two racks."""
import importlib.machinery
import importlib.util
import shlex
from pathlib import Path

NETCLUSTER = Path(__file__).resolve().parent.parent / "tools" / "netcluster"
# Flags that are compare.py's to give (per baseline), not part of a topology.
_NOT_TOPOLOGY = ("--", "--mpi", "--measure", "--measure-json", "--cleanup", "--timeout", "--quiet")


def _netcluster():
    loader = importlib.machinery.SourceFileLoader("netcluster_tool", str(NETCLUSTER))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


class Topology:
    """The cluster of `tools/netcluster ARGS`: hosts, racks (host h in rack h x racks // hosts),
    ranks per host, link rates (uplinks default to a third of the host links), placement and
    cluster map. Raises ValueError on arguments netcluster would refuse, or that are not
    topology."""

    def __init__(self, text):
        self.text = text
        self.argv = shlex.split(text)
        bad = [a for a in self.argv if a.split("=")[0] in _NOT_TOPOLOGY]
        if bad:
            raise ValueError(f"--netcluster takes topology arguments only, not {' '.join(bad)} "
                             "(compare.py adds --mpi, --timeout and the command)")
        tool = _netcluster()
        try:
            a = tool.parse_args(self.argv + ["--", "true"])
        except SystemExit as e:  # argparse has printed why
            raise ValueError(f"tools/netcluster refuses {text!r}") from e
        self.hosts, self.racks, self.per_host = a.hosts, a.racks, a.ranks_per_host
        self.rack_gbit = a.rack_gbit
        self.uplink_gbit = a.uplink_gbit if a.uplink_gbit is not None else a.rack_gbit / 3
        self.placement, self.latency_us, self.map_file = a.placement, a.latency_us, a.write_cluster_map
        self.ranks = self.hosts * self.per_host
        self.burst_us = a.burst_us
        self.queue_ms = a.queue_ms
        self.uplink_burst = tool.burst_bytes(self.uplink_gbit, a.burst_us)  # bytes an idle uplink passes at once
        self.rack_sizes = [sum(1 for h in range(self.hosts) if h * self.racks // self.hosts == r)
                           for r in range(self.racks)]

    def command(self, cmd, mpi=False, timeout=0):
        """`tools/netcluster ARGS [--mpi] -- cmd`; quiet but for failures, killed after timeout s."""
        return ([str(NETCLUSTER), "--quiet"] + (["--timeout", str(timeout)] if timeout else []) + self.argv
                + (["--mpi"] if mpi else []) + ["--"] + list(cmd))

    def describe(self):
        """One markdown line: what the ranks run on."""
        per = " + ".join(str(n) for n in self.rack_sizes) if len(set(self.rack_sizes)) > 1 else \
            f"{self.rack_sizes[0]} each"
        order = ("block (rank order h0, h1, ...: a rack's hosts together)" if self.placement == "block" else
                 "alternate (rank order rack0's first host, rack1's first host, ...: neighbouring ranks in "
                 "different racks)")
        latency = ("no latency emulated" if not self.latency_us else
                   f"{self.latency_us:g} us latency per link (tc netem; where the kernel lacks it, netcluster warns "
                   "and only the cluster map has it)")
        cmap = (f"cluster map `{self.map_file}` (BRAID_CLUSTER_FILE: Braid is given the racks and links)"
                if self.map_file else "no cluster map (Braid's init probe finds the racks)")
        return (f"- cluster: `tools/netcluster {self.text}`: {self.hosts} emulated hosts (network namespaces on this "
                f"machine, sharing its cores) in {self.racks} racks ({per}), {self.per_host} rank"
                f"{'s' if self.per_host > 1 else ''} per host ({self.ranks} ranks); host links "
                f"{self.rack_gbit:g} Gbit/s, rack uplinks {self.uplink_gbit:.3g} Gbit/s each way (shared by the "
                f"rack's hosts); shapers' token buckets {self.burst_us:g} us of traffic at their rate (at least 64 "
                f"KiB: an uplink's {self.uplink_burst / 1024:.0f} KiB pass at once after it idles), their queues "
                f"{self.queue_ms:g} ms (packets beyond are dropped); placement {order}; "
                f"{latency}; {cmap}")

    def uplink_bound_us(self, size, gbit):
        """The least time of an AllReduce of `size` bytes whose racks' uplinks run at `gbit`:
        every rack must send and receive 2(R-1)/R of its partial sum (reduce-scatter, then
        all-gather across racks), so for two racks size x 8 / (gbit x 1e9) seconds."""
        return 2 * (self.racks - 1) / self.racks * size * 8 / (gbit * 1e9) * 1e6
