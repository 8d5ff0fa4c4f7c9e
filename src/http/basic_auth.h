// BasicAuthenticator: checks an HTTP Basic Authorization header against basic_auth_users (bcrypt
// hashes), as exporter-toolkit does: a bcrypt check costs ~50 ms at cost 10, so checks run one at a
// time (a flood of wrong passwords takes one core, not every thread) and a verified user:password is
// cached (by its SHA-256, never the password itself), so a scraper pays once. An unknown user costs the
// same bcrypt as a known one, so timing does not tell which users exist.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope::http {

enum class AuthRefusal { kNone, kMissingCredentials, kMalformedCredentials, kUnknownUser, kWrongPassword };
std::string_view auth_refusal_name(AuthRefusal r);  // the `reason` label: missing_credentials, ...

struct AuthOutcome {
  AuthRefusal refusal = AuthRefusal::kNone;  // kNone: let in
  std::string user;                          // as sent (empty when none could be read)
  bool ok() const { return refusal == AuthRefusal::kNone; }
};

class BasicAuthenticator {
 public:
  // Verified user:password pairs kept; past it the cache starts over (a scraper re-verifies once).
  static constexpr std::size_t kMaxCachedCredentials = 256;

  // `users`: user → bcrypt hash (checked by load_web_config).
  explicit BasicAuthenticator(std::vector<std::pair<std::string, std::string>> users);

  // `authorization`: the request's Authorization header, if any.
  AuthOutcome check(std::optional<std::string_view> authorization);

  // bcrypt computations so far (cache hits compute none).
  std::uint64_t bcrypt_runs() const { return bcrypt_runs_.load(std::memory_order_relaxed); }

 private:
  bool bcrypt_matches(std::string_view password, const std::string& hash);

  std::vector<std::pair<std::string, std::string>> users_;
  std::string decoy_hash_;  // the costliest configured hash, checked for unknown users
  std::mutex bcrypt_mu_;    // one bcrypt at a time
  std::mutex cache_mu_;
  std::set<std::array<unsigned char, 32>> cache_;
  std::atomic<std::uint64_t> bcrypt_runs_{0};
};

// "Basic dXNlcjpwYXNz" → {"user", "pass"}; nullopt when not Basic or not base64 of "user:password".
std::optional<std::pair<std::string, std::string>> parse_basic_credentials(std::string_view authorization);

// Equal strings, in a time that depends on their lengths only.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace gpuscope::http
