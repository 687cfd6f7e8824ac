// The ring and the segment on their own, in one thread: wrap-around copies, the header stamp,
// and that a segment's name disappears with it.
#include "transport/shm/ring.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <vector>

#include "transport/shm/segment.h"

namespace braid::transport {
namespace {

bool shmExists(const std::string& name) {
  struct stat st {};
  return stat(("/dev/shm/" + name).c_str(), &st) == 0;
}

TEST(Ring, CapacityIsRoundedToRecordAlignment) {
  EXPECT_EQ(Ring::roundCapacity(0), 4096u);
  EXPECT_EQ(Ring::roundCapacity(4097), 4112u);
  EXPECT_EQ(Ring::roundCapacity(1 << 20), size_t{1} << 20);
}

TEST(Ring, CopiesWrapAroundTheEnd) {
  Segment seg;
  ASSERT_TRUE(Segment::anonymous(Ring::bytesFor(4096), &seg).ok());
  Ring ring;
  ASSERT_TRUE(Ring::init(seg.data(), seg.size(), 4096, &ring).ok());
  RingWriter w(ring);
  RingReader r(ring);
  std::vector<uint8_t> in(3000), out(3000);
  for (int round = 0; round < 10; ++round) {  // 30000 bytes through 4096: every offset wraps
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + round);
    ASSERT_GE(w.writable(in.size()), in.size());
    w.write(in.data(), in.size());
    EXPECT_EQ(r.readable(), 0u) << "bytes visible before publish";
    w.publish();
    ASSERT_EQ(r.readable(), in.size());
    size_t pieces = 0, seen = 0;
    r.visit(in.size(), [&](const void* p, size_t n) {
      EXPECT_EQ(std::memcmp(p, in.data() + seen, n), 0);
      seen += n;
      ++pieces;
    });
    EXPECT_EQ(seen, in.size());
    EXPECT_LE(pieces, 2u);
    r.read(out.data(), out.size());
    r.release();
    EXPECT_EQ(out, in);
  }
  EXPECT_EQ(w.writable(4096), 4096u);
}

TEST(Ring, HeaderIsVisibleOnlyOnceStampedAtItsPosition) {
  Segment seg;
  ASSERT_TRUE(Segment::anonymous(Ring::bytesFor(4096), &seg).ok());
  Ring ring;
  ASSERT_TRUE(Ring::init(seg.data(), seg.size(), 4096, &ring).ok());
  uint64_t word = 0;
  EXPECT_FALSE(ring.readHeader(0, &word)) << "fresh memory looks stamped";
  ring.writeHeader(0, 42);
  ASSERT_TRUE(ring.readHeader(0, &word));
  EXPECT_EQ(word, 42u);
  // Same slot one lap later: the old stamp must not pass for the new record.
  EXPECT_FALSE(ring.readHeader(4096, &word));
  ring.writeHeader(4096, 43);
  EXPECT_TRUE(ring.readHeader(4096, &word));
  EXPECT_FALSE(ring.readHeader(0, &word));
}

TEST(Ring, AttachRejectsForeignMemory) {
  std::vector<uint64_t> junk(Ring::bytesFor(4096) / 8, 0x4141414141414141ull);
  Ring ring;
  EXPECT_FALSE(Ring::attach(junk.data(), junk.size() * 8, &ring).ok());
  EXPECT_FALSE(Ring::attach(junk.data(), 100, &ring).ok());
}

TEST(Segment, NameIsGoneAfterUnlinkOrDestruction) {
  const std::string name = uniqueSegmentName("test");
  {
    Segment seg;
    ASSERT_TRUE(Segment::create(name, 8192, &seg).ok());
    EXPECT_TRUE(shmExists(name));
    Segment again;
    EXPECT_FALSE(Segment::create(name, 8192, &again).ok()) << "create must not reuse a name";
    Segment opened;
    EXPECT_FALSE(Segment::open(name, 4 * 8192, &opened).ok()) << "size mismatch accepted";
    ASSERT_TRUE(Segment::open(name, 8192, &opened).ok());
    static_cast<char*>(seg.data())[100] = 7;
    EXPECT_EQ(static_cast<char*>(opened.data())[100], 7);
  }
  EXPECT_FALSE(shmExists(name));
  Segment seg;
  ASSERT_TRUE(Segment::create(name, 8192, &seg).ok());
  seg.unlink();
  EXPECT_FALSE(shmExists(name));
  EXPECT_FALSE(Segment::open(name, 8192, &seg).ok());
}

}  // namespace
}  // namespace braid::transport
