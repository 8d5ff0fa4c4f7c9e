// Gzip traces read through TraceByteReader with each inflater (igzip where libisal is installed, as
// scripts/setup installs it; zlib): the same bytes as zlib's own one-shot inflate for the real traces,
// concatenated members, headers with every optional field, and every kind of damage reported.
#include "trace/gzip_inflater.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <iterator>
#include <string>

#include "trace/trace_byte_reader.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

class GzipInflaterKind : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { igzip_ = GzipInflater::use_igzip(GetParam()); }
  void TearDown() override { GzipInflater::use_igzip(true); }
  bool igzip_ = false;
};

INSTANTIATE_TEST_SUITE_P(Inflaters, GzipInflaterKind, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Igzip" : "Zlib"; });

std::expected<std::string, TraceError> read_through(const std::string& gz, std::size_t chunk) {
  auto reader = TraceByteReader::from_memory(gz.data(), gz.size());
  return testing::read_all(reader, chunk);
}

// zlib's own inflate of a whole gzip stream (the reference).
std::string zlib_inflate_all(const std::string& gz) {
  z_stream zs{};
  inflateInit2(&zs, 15 + 32);
  std::string out;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  char buffer[1 << 16];
  for (int rc = Z_OK; rc == Z_OK;) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof buffer;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - zs.avail_out);
  }
  inflateEnd(&zs);
  return out;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_P(GzipInflaterKind, IsTheOneAskedForAndIgzipIsInstalledHere) {
  EXPECT_EQ(GzipInflater::make()->name(), std::string(GetParam() ? "igzip" : "zlib"));
  EXPECT_EQ(igzip_, GetParam());  // scripts/setup installs libisal
}

TEST_P(GzipInflaterKind, RealTracesInflateToZlibsBytesInAnyPieces) {
  for (const char* name : {"trace_diff__control__control.json.gz", "trace_filter__sampled_rank-0.json.gz"}) {
    const std::string gz = file_bytes(testing::conformance_trace(name));
    ASSERT_FALSE(gz.empty()) << name;
    const std::string expected = zlib_inflate_all(gz);
    ASSERT_GT(expected.size(), 100000u);
    for (const std::size_t chunk : {std::size_t{4093}, std::size_t{1} << 20}) {
      auto got = read_through(gz, chunk);
      ASSERT_TRUE(got.has_value()) << got.error().what();
      EXPECT_TRUE(*got == expected) << name << ", pieces of " << chunk;
    }
  }
}

TEST_P(GzipInflaterKind, ConcatenatedMembersAreOneStream) {
  const std::string a = R"({"traceEvents": [)", b = R"({"ph": "X"}]})";
  auto got = read_through(testing::gzip_text(a) + testing::gzip_text(b), 7);
  ASSERT_TRUE(got.has_value()) << got.error().what();
  EXPECT_EQ(*got, a + b);
}

// `text` gzipped by zlib with every optional header field: a name, a comment, an extra field and the
// header's own CRC.
std::string gzip_with_every_header_field(const std::string& text, std::string name = "trace.json") {
  z_stream zs{};
  deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  char comment[] = "from a test";
  unsigned char extra[] = {'G', 'S', 2, 0, 1, 2};
  gz_header header{};
  header.name = reinterpret_cast<Bytef*>(name.data());
  header.comment = reinterpret_cast<Bytef*>(comment);
  header.extra = extra;
  header.extra_len = sizeof extra;
  header.hcrc = 1;
  deflateSetHeader(&zs, &header);
  std::string gz(deflateBound(&zs, text.size()) + 256 + name.size(), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  return gz;
}

// A gzip member of exactly `size` bytes, built by hand from stored (uncompressed) deflate blocks: 10
// bytes of header, 5 per block, the data (`fill` repeated; returned in `data`), 8 of trailer.
std::string stored_member(std::size_t size, char fill, std::string& data) {
  std::size_t blocks = 1;
  while (size - 18 - 5 * blocks > 65535 * blocks) ++blocks;
  data.assign(size - 18 - 5 * blocks, fill);
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  for (std::size_t at = 0, b = 0; b < blocks; ++b) {
    const std::size_t piece = b + 1 == blocks ? data.size() - at : std::min<std::size_t>(65535, data.size() - at);
    out += static_cast<char>(b + 1 == blocks ? 1 : 0);  // BFINAL on the last, BTYPE 00: stored
    for (const std::size_t v : {piece, ~piece & 0xFFFF}) {
      out += static_cast<char>(v & 0xFF);
      out += static_cast<char>((v >> 8) & 0xFF);
    }
    out.append(data, at, piece);
    at += piece;
  }
  const auto crc = crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
  for (const std::uint64_t v : {static_cast<std::uint64_t>(crc), static_cast<std::uint64_t>(data.size())}) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
  }
  return out;
}

// The second member's header cut by the end of the reader's first 256 KiB of compressed bytes, at
// every place in it: igzip must be given a header whole (intel/isa-l#224), or it reads garbage flags.
TEST_P(GzipInflaterKind, AMemberHeaderCutByAReadIsReadWhole) {
  const std::string second = gzip_with_every_header_field("second member");  // a 50-byte header
  for (std::size_t first_size = (256u << 10) - 52; first_size <= (256u << 10) + 1; ++first_size) {
    std::string data;
    const std::string first = stored_member(first_size, 'a', data);
    ASSERT_EQ(first.size(), first_size);
    auto got = read_through(first + second, 1 << 20);
    ASSERT_TRUE(got.has_value()) << first_size << ": " << got.error().what();
    ASSERT_TRUE(*got == data + "second member") << first_size;
  }
}

TEST_P(GzipInflaterKind, HeadersWithNameCommentExtraAndHeaderCrc) {
  const std::string text(300000, 'x');
  auto got = read_through(gzip_with_every_header_field(text), 1000);
  ASSERT_TRUE(got.has_value()) << got.error().what();
  EXPECT_EQ(*got, text);
  // A header longer than the reader's buffer (a 400 KiB name): zlib reads that member.
  got = read_through(gzip_with_every_header_field(text, std::string(400u << 10, 'n')), 1000);
  ASSERT_TRUE(got.has_value()) << got.error().what();
  EXPECT_EQ(*got, text);
}

TEST_P(GzipInflaterKind, EveryDamageIsReported) {
  const std::string text = std::string(R"({"traceEvents": [)") + std::string(5000, ' ') + "]}";
  const std::string gz = testing::gzip_text(text);
  auto expect_error = [&](const std::string& bad, TraceErrorKind kind, const char* what) {
    auto got = read_through(bad, 512);
    ASSERT_FALSE(got.has_value()) << what;
    EXPECT_EQ(got.error().kind, kind) << what << ": " << got.error().what();
    EXPECT_FALSE(got.error().message.empty()) << what;
  };
  std::string crc = gz;
  crc[crc.size() - 8] = static_cast<char>(crc[crc.size() - 8] ^ 1);  // the trailer's CRC-32
  expect_error(crc, TraceErrorKind::kNotJson, "CRC");
  std::string length = gz;
  length[length.size() - 4] = static_cast<char>(length[length.size() - 4] ^ 1);  // the trailer's length
  expect_error(length, TraceErrorKind::kNotJson, "length");
  expect_error(gz.substr(0, gz.size() - 3), TraceErrorKind::kTruncated, "cut in the trailer");
  expect_error(gz.substr(0, gz.size() / 2), TraceErrorKind::kTruncated, "cut in the data");
  expect_error(gz.substr(0, 6), TraceErrorKind::kTruncated, "cut in the header");
  expect_error(gz + gz.substr(0, 6), TraceErrorKind::kTruncated, "cut in the second member's header");
  expect_error(gz + "garbage after the member", TraceErrorKind::kNotJson, "bytes after the last member");
  std::string method = gz;
  method[2] = 7;  // not deflate
  expect_error(method, TraceErrorKind::kNotJson, "compression method");
}

}  // namespace
}  // namespace gpuscope::trace
