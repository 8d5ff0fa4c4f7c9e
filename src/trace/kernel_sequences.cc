#include "trace/kernel_sequences.h"

#include <algorithm>
#include <unordered_map>

#include "trace/idle_intervals.h"

namespace gpuscope::trace {
namespace {

// One kernel in stream order: the flat array holds each stream's kernels in order, its runs (no copy
// or memset in between) separated by their bounds.
struct SeqKernel {
  std::uint32_t name_id = 0;
  std::uint32_t run_end = 0;  // index past the last kernel of this kernel's run
  std::int64_t stream = -1;
};

struct SeqEntry {
  std::uint64_t hash = 0;
  std::uint32_t first = 0;      // where it first occurs
  std::uint32_t next_free = 0;  // first index after the last counted occurrence
  std::uint32_t repeats = 0;
  std::uint8_t length = 0;
  std::int64_t kernel_ns = 0;
  std::int64_t inner_idle_ns = 0;
};

std::uint64_t seq_mix(std::uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool seq_same(const std::vector<SeqKernel>& k, std::uint32_t a, std::uint32_t b, std::size_t length) {
  for (std::size_t j = 0; j < length; ++j) {
    if (k[a + j].name_id != k[b + j].name_id) return false;
  }
  return k[a].stream == k[b].stream;
}

// A sequence that is a prefix of at least `min_length` kernels repeated (ABAB): the prefix is a
// candidate of its own. A run of one kernel (AAAA) is kept: its prefix is too short to be listed.
bool seq_periodic(const std::vector<SeqKernel>& k, std::uint32_t at, std::size_t length, std::size_t min_length) {
  for (std::size_t p = 1; p < length; ++p) {
    if (length % p != 0) continue;
    bool periodic = true;
    for (std::size_t j = p; j < length && periodic; ++j) periodic = k[at + j].name_id == k[at + j - p].name_id;
    if (periodic) return p >= min_length;
  }
  return false;
}

}  // namespace

std::vector<KernelSequence> find_kernel_sequences(std::span<const GpuActivity> acts, const std::vector<std::string>& names,
                                                  const KernelSequenceOptions& options) {
  const std::size_t min_length = std::max<std::size_t>(2, options.min_length);
  const std::size_t max_length = std::clamp<std::size_t>(options.max_length, min_length, 255);
  // Each stream's kernels in order, with their GPU time and the idle gap before each (the stream's HTA
  // host-wait or kernel-wait gap; "other" gaps, syncs and waits on other streams, a graph keeps).
  std::unordered_map<std::int32_t, std::vector<const GpuActivity*>> by_stream;
  for (const GpuActivity& a : acts) by_stream[a.stream].push_back(&a);
  std::vector<std::int32_t> stream_ids;
  for (const auto& [id, list] : by_stream) stream_ids.push_back(id);
  std::sort(stream_ids.begin(), stream_ids.end());

  std::vector<SeqKernel> k;
  std::vector<std::int64_t> time_prefix{0}, idle_prefix{0};  // over k
  k.reserve(acts.size());
  time_prefix.reserve(acts.size() + 1);
  idle_prefix.reserve(acts.size() + 1);
  for (const std::int32_t id : stream_ids) {
    const auto& list = by_stream[id];
    std::int64_t covered_end = list.front()->start_ns;
    std::size_t run_start = k.size();
    const auto close_run = [&] {
      for (std::size_t j = run_start; j < k.size(); ++j) k[j].run_end = static_cast<std::uint32_t>(k.size());
      run_start = k.size();
    };
    for (const GpuActivity* a : list) {
      std::int64_t gap = 0;
      if (a->start_ns > covered_end) {
        if (classify_gap_kind(covered_end, *a, options.kernel_wait_threshold_ns) != GapKind::kOther) gap = a->start_ns - covered_end;
        if (a->start_ns - covered_end >= options.break_gap_ns) close_run(), gap = 0;
      }
      covered_end = std::max(covered_end, a->end_ns());
      if (a->kind != ActivityKind::kComputeKernel && a->kind != ActivityKind::kCommunicationKernel) {
        close_run();
        continue;
      }
      k.push_back(SeqKernel{a->name_id, 0, id});
      time_prefix.push_back(time_prefix.back() + a->duration_ns);
      idle_prefix.push_back(idle_prefix.back() + gap);
    }
    close_run();
  }
  const std::size_t n = k.size();
  if (n < min_length) return {};

  // Open addressing over entry indices, doubled at half full up to 2^21 slots (8 MiB, and 40 MiB of
  // entries at most): a training loop repeats itself, so there are far fewer distinct sequences than
  // (start, length) pairs (3.4k of 60k on the 35 MB trace).
  constexpr std::size_t kMaxSlots = 1u << 21;
  std::size_t slots = 4096;
  std::vector<std::uint32_t> table(slots, 0);  // entry index + 1; 0 is empty
  std::vector<SeqEntry> entries;
  const auto grow = [&] {
    slots *= 2;
    table.assign(slots, 0);
    for (std::uint32_t at = 0; at < entries.size(); ++at) {
      std::size_t slot = entries[at].hash & (slots - 1);
      while (table[slot] != 0) slot = (slot + 1) & (slots - 1);
      table[slot] = at + 1;
    }
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint64_t h = seq_mix(static_cast<std::uint64_t>(k[i].stream) + 0x9e3779b97f4a7c15ULL);
    const std::size_t longest = std::min<std::size_t>(max_length, k[i].run_end - i);
    for (std::size_t length = 1; length <= longest; ++length) {
      h = seq_mix(h ^ (k[i + length - 1].name_id + 1ULL));
      if (length < min_length) continue;
      const std::uint64_t key = h ^ length;
      std::size_t slot = key & (slots - 1);
      SeqEntry* e = nullptr;
      for (;;) {
        const std::uint32_t at = table[slot];
        if (at == 0) break;
        SeqEntry& c = entries[at - 1];
        if (c.hash == key && c.length == length) {
          e = &c;
          break;
        }
        slot = (slot + 1) & (slots - 1);
      }
      if (e == nullptr) {
        if (2 * (entries.size() + 1) > slots) {
          // Past 2^20 distinct sequences (a trace of millions of kernels) the ones seen so far go on
          // being counted and new ones are not taken in.
          if (slots >= kMaxSlots) continue;
          grow();
          slot = key & (slots - 1);
          while (table[slot] != 0) slot = (slot + 1) & (slots - 1);
        }
        entries.push_back(SeqEntry{key, i, i, 0, static_cast<std::uint8_t>(length), 0, 0});
        table[slot] = static_cast<std::uint32_t>(entries.size());
        e = &entries.back();
      }
      if (i >= e->next_free) {
        ++e->repeats;
        e->next_free = i + static_cast<std::uint32_t>(length);
        e->kernel_ns += time_prefix[i + length] - time_prefix[i];
        e->inner_idle_ns += idle_prefix[i + length] - idle_prefix[i + 1];
      }
    }
  }

  std::vector<const SeqEntry*> candidates;
  for (const SeqEntry& e : entries) {
    if (e.repeats >= 2 && !seq_periodic(k, e.first, e.length, min_length)) candidates.push_back(&e);
  }
  const auto saving = [&](const SeqEntry& e) {
    return e.inner_idle_ns + static_cast<std::int64_t>((e.length - 1u) * e.repeats) * options.mean_launch_ns;
  };
  // Only the best few are ever examined: order just those.
  const std::size_t examine = std::min(candidates.size(), 50 * std::max<std::size_t>(options.top, 1));
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(examine), candidates.end(),
                    [&](const SeqEntry* a, const SeqEntry* b) {
                      const std::int64_t sa = saving(*a), sb = saving(*b);
                      if (sa != sb) return sa > sb;
                      if (a->length != b->length) return a->length < b->length;
                      return a->first < b->first;
                    });

  // Where each kernel name occurs, in order (a counting sort by name id): a candidate's occurrences are
  // looked for only where its first kernel runs, not along its whole stream.
  std::vector<std::uint32_t> name_start(names.size() + 2, 0), positions(n);
  for (const SeqKernel& x : k) ++name_start[x.name_id + 2];
  for (std::size_t j = 2; j < name_start.size(); ++j) name_start[j] += name_start[j - 1];
  for (std::uint32_t i = 0; i < n; ++i) positions[name_start[k[i].name_id + 1]++] = i;

  // Greedy: a candidate whose occurrences mostly lie inside those of one listed before adds nothing.
  std::vector<bool> covered(n, false);
  std::vector<KernelSequence> out;
  std::vector<std::uint32_t> occurrences;
  for (std::size_t c = 0; c < examine && out.size() < options.top; ++c) {
    const SeqEntry& e = *candidates[c];
    occurrences.clear();
    std::size_t inside = 0;
    const std::uint32_t id = k[e.first].name_id;
    const auto begin = positions.begin() + name_start[id], end = positions.begin() + name_start[id + 1];
    std::uint32_t next = e.first;  // occurrences do not overlap: the next may start here
    for (auto it = std::lower_bound(begin, end, e.first); it != end; ++it) {
      const std::uint32_t i = *it;
      if (k[i].stream != k[e.first].stream) break;  // a stream's kernels are contiguous in k
      if (i < next || i + e.length > k[i].run_end || !seq_same(k, e.first, i, e.length)) continue;
      occurrences.push_back(i);
      for (std::size_t j = 0; j < e.length; ++j) inside += covered[i + j] ? 1 : 0;
      next = i + static_cast<std::uint32_t>(e.length);
    }
    if (occurrences.size() < 2 || 2 * inside > occurrences.size() * e.length) continue;
    KernelSequence s;
    for (const std::uint32_t i : occurrences) {
      for (std::size_t j = 0; j < e.length; ++j) covered[i + j] = true;
      // Counted again from the occurrences found id by id: a hash collision in the table cannot
      // change a listed figure.
      s.kernel_ns += time_prefix[i + e.length] - time_prefix[i];
      s.inner_idle_ns += idle_prefix[i + e.length] - idle_prefix[i + 1];
    }
    s.stream = k[e.first].stream;
    for (std::size_t j = 0; j < e.length; ++j) s.kernels.push_back(names[k[e.first + j].name_id]);
    s.repeats = occurrences.size();
    s.launches_saved = static_cast<std::uint64_t>(e.length - 1u) * s.repeats;
    s.launch_ns = static_cast<std::int64_t>(s.launches_saved) * options.mean_launch_ns;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpuscope::trace
