// Runs a libFuzzer target without libFuzzer (g++ has none): every file of a corpus directory, then
// random mutations of them (bit flips, JSON punctuation, cuts, splices) for a bounded count or time.
// The seed is fixed so a failure replays; a crash is the failure (ctest sees the signal).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void run_one(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

std::string mutate(std::string s, std::mt19937_64& rng, const std::vector<std::string>& corpus) {
  static constexpr std::string_view kTokens[] = {"{", "}", "[", "]", ",", ":", "\"", "\\", "-1", "1e400", "null",
                                                 "\"ph\":\"X\"", "\"dur\":-5", "\"ts\":\"x\"", "\"args\":[]", "\xff", "\x01"};
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:
        if (!s.empty() && at < s.size()) s[at] = static_cast<char>(s[at] ^ (1u << (rng() % 8)));
        break;
      case 1: {
        const auto& t = kTokens[rng() % std::size(kTokens)];
        s.insert(at, t);
        break;
      }
      case 2:
        if (at < s.size()) s.erase(at, 1 + rng() % 16);
        break;
      case 3:
        s.resize(at);  // truncation
        break;
      case 4: {
        const std::string& other = corpus[rng() % corpus.size()];
        if (!other.empty()) {
          const std::size_t from = rng() % other.size();
          s.insert(at, other.substr(from, 1 + rng() % 64));
        }
        break;
      }
      default:
        if (at < s.size()) s.insert(at, s.substr(at, 1 + rng() % 32));
        break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  long mutations = 10000;
  double seconds = 15;
  unsigned long long seed = 20240601;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.starts_with("--mutations=")) {
      mutations = std::atol(argv[i] + 12);
    } else if (a.starts_with("--seconds=")) {
      seconds = std::atof(argv[i] + 10);
    } else if (a.starts_with("--seed=")) {
      seed = std::strtoull(argv[i] + 7, nullptr, 10);
    } else {
      dir = std::string(a);
    }
  }
  std::vector<std::string> corpus;
  if (!dir.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [--mutations=N] [--seconds=S] [--seed=N]\n", argv[0]);
    return 2;
  }
  for (const auto& input : corpus) run_one(input);
  std::mt19937_64 rng(seed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  long done = 0;
  for (; done < mutations && std::chrono::steady_clock::now() < deadline; ++done) {
    run_one(mutate(corpus[rng() % corpus.size()], rng, corpus));
  }
  std::printf("replayed %zu corpus files and %ld mutations (seed %llu)\n", corpus.size(), done, seed);
  return 0;
}
