#include "store/chunk_database.h"

#include <gtest/gtest.h>

#include "store/xor_chunk.h"
#include "store_test_support.h"

namespace gpuscope::store {
namespace {

using testing::kT0;
using testing::TempDir;

XorChunk chunk_of(std::int64_t from, int n) {
  XorChunk c;
  for (int i = 0; i < n; ++i) c.append(from + i * 1000, 40 + i % 3);
  return c;
}

ChunkToWrite to_write(std::uint64_t id, const Labels* labels, const XorChunk& c) {
  return {id, labels, c.first_time(), c.last_time(), static_cast<std::uint32_t>(c.samples()), c.data()};
}

TEST(ChunkDatabase, WritesReplacesReadsAndDeletesChunks) {
  TempDir dir;
  auto db = ChunkDatabase::open(dir.path() / "chunks.sqlite");
  ASSERT_TRUE(db) << db.error();
  const Labels a{{"__name__", "x"}, {"gpu", "0"}}, b{{"__name__", "x"}, {"gpu", "1"}, {"note", "a \"quoted\"\nvalue"}};
  const auto a1 = chunk_of(kT0, 60), a1_grown = chunk_of(kT0, 120), a2 = chunk_of(kT0 + 120000, 30);
  const auto b1 = chunk_of(kT0 + 3600000, 10);
  const ChunkToWrite first[] = {to_write(1, &a, a1), to_write(2, &b, b1)};
  ASSERT_TRUE((*db)->write(first));
  // The open chunk's snapshot grows under the same key.
  const ChunkToWrite second[] = {to_write(1, &a, a1_grown), to_write(1, &a, a2)};
  ASSERT_TRUE((*db)->write(second));

  auto series = (*db)->series();
  ASSERT_TRUE(series) << series.error();
  ASSERT_EQ(series->size(), 2u);
  EXPECT_EQ((*series)[0].labels, a);
  EXPECT_EQ((*series)[0].min_t, kT0);
  EXPECT_EQ((*series)[0].max_t, a2.last_time());
  EXPECT_EQ((*series)[1].labels, b);  // any byte in a value round-trips

  auto read = (*db)->read(1, kT0 + 100000, kT0 + 130000);
  ASSERT_TRUE(read) << read.error();
  ASSERT_EQ(read->chunks.size(), 2u);
  EXPECT_EQ(read->chunks[0].samples, 120u);
  EXPECT_EQ(read->chunks[0].data, std::vector<std::uint8_t>(a1_grown.data().begin(), a1_grown.data().end()));
  EXPECT_EQ(read->chunks[1].min_t, kT0 + 120000);
  EXPECT_TRUE(read->damaged.empty());
  read = (*db)->read(1, kT0 + 200000, kT0 + 300000);
  ASSERT_TRUE(read);
  EXPECT_TRUE(read->chunks.empty());

  auto recent = (*db)->read_all_since(kT0 + 130000);
  ASSERT_TRUE(recent);
  ASSERT_EQ(recent->chunks.size(), 2u);  // a2 and b1
  EXPECT_EQ(recent->chunks[0].series_id, 1u);
  EXPECT_EQ(recent->chunks[1].series_id, 2u);

  auto deleted = (*db)->delete_before(kT0 + 3600000);
  ASSERT_TRUE(deleted) << deleted.error();
  EXPECT_EQ(deleted->chunks_deleted, 2u);
  EXPECT_EQ(deleted->series_deleted, std::vector<std::uint64_t>{1});
  series = (*db)->series();
  ASSERT_TRUE(series);
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ((*series)[0].id, 2u);
  EXPECT_TRUE((*db)->check_integrity());
  EXPECT_GT((*db)->file_bytes(), 0u);
}

TEST(ChunkDatabase, ChunkCrcCoversTheSampleCountAndTheData) {
  const std::vector<std::uint8_t> data{1, 2, 3, 4};
  const auto crc = chunk_crc32(4, data);
  EXPECT_NE(crc, chunk_crc32(5, data));
  EXPECT_NE(crc, chunk_crc32(4, std::vector<std::uint8_t>{1, 2, 3, 5}));
  EXPECT_EQ(crc, chunk_crc32(4, data));
}

TEST(ChunkDatabase, ReopensItsFileAndSaysWhyOneCannotBeOpened) {
  TempDir dir;
  const Labels a{{"__name__", "x"}};
  const auto c = chunk_of(kT0, 5);
  {
    auto db = ChunkDatabase::open(dir.path() / "chunks.sqlite");
    ASSERT_TRUE(db);
    const ChunkToWrite w[] = {to_write(7, &a, c)};
    ASSERT_TRUE((*db)->write(w));
  }
  auto db = ChunkDatabase::open(dir.path() / "chunks.sqlite");
  ASSERT_TRUE(db) << db.error();
  auto series = (*db)->series();
  ASSERT_TRUE(series);
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ((*series)[0].id, 7u);
  auto missing_dir = ChunkDatabase::open(dir.path() / "no" / "such" / "chunks.sqlite");
  ASSERT_FALSE(missing_dir);
  EXPECT_NE(missing_dir.error().find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::store
