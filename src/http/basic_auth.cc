#include "http/basic_auth.h"

#include <strings.h>

#include <memory>

#include "http/crypt_library.h"
#include "http/gnutls_library.h"

namespace gpuscope::http {
namespace {

int basic_auth_base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::optional<std::string> basic_auth_base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[k] = basic_auth_base64_value(c);
      if (v[k] < 0) return std::nullopt;
    }
    const unsigned n = (unsigned(v[0]) << 18) | (unsigned(v[1]) << 12) | (unsigned(v[2]) << 6) | unsigned(v[3]);
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

int bcrypt_cost(const std::string& hash) { return (hash[4] - '0') * 10 + (hash[5] - '0'); }

}  // namespace

std::string_view auth_refusal_name(AuthRefusal r) {
  switch (r) {
    case AuthRefusal::kNone: return "none";
    case AuthRefusal::kMissingCredentials: return "missing_credentials";
    case AuthRefusal::kMalformedCredentials: return "malformed_credentials";
    case AuthRefusal::kUnknownUser: return "unknown_user";
    case AuthRefusal::kWrongPassword: return "wrong_password";
  }
  return "?";
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::optional<std::pair<std::string, std::string>> parse_basic_credentials(std::string_view h) {
  while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
  if (h.size() < 6 || strncasecmp(h.data(), "Basic ", 6) != 0) return std::nullopt;
  h.remove_prefix(6);
  while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
  while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
  auto decoded = basic_auth_base64_decode(h);
  if (!decoded) return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::pair{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

BasicAuthenticator::BasicAuthenticator(std::vector<std::pair<std::string, std::string>> users) : users_(std::move(users)) {
  for (const auto& [user, hash] : users_) {
    if (decoy_hash_.empty() || bcrypt_cost(hash) > bcrypt_cost(decoy_hash_)) decoy_hash_ = hash;
  }
}

bool BasicAuthenticator::bcrypt_matches(std::string_view password, const std::string& hash) {
  auto api = crypt_api();
  if (!api) return false;  // no libcrypt: nobody gets in (the agent checked it at start)
  std::lock_guard lock(bcrypt_mu_);
  bcrypt_runs_.fetch_add(1, std::memory_order_relaxed);
  auto data = std::make_unique<crypt_data>();  // 32 KiB: not on a server thread's stack
  const std::string phrase(password);
  const char* out = (*api)->crypt_r(phrase.c_str(), hash.c_str(), data.get());
  // libxcrypt answers an error with a string starting with '*', never equal to a real hash.
  return out != nullptr && constant_time_equal(out, hash);
}

AuthOutcome BasicAuthenticator::check(std::optional<std::string_view> authorization) {
  AuthOutcome outcome;
  if (!authorization) {
    outcome.refusal = AuthRefusal::kMissingCredentials;
    return outcome;
  }
  auto credentials = parse_basic_credentials(*authorization);
  if (!credentials) {
    outcome.refusal = AuthRefusal::kMalformedCredentials;
    return outcome;
  }
  auto& [user, password] = *credentials;
  outcome.user = user;
  const std::string* hash = nullptr;
  for (const auto& [u, h] : users_) {
    if (constant_time_equal(u, user)) hash = &h;
  }
  if (hash == nullptr) {
    bcrypt_matches(password, decoy_hash_);  // the time of a real check, its answer ignored
    outcome.refusal = AuthRefusal::kUnknownUser;
    return outcome;
  }
  // The cache key: SHA-256 of user, hash and password, so a changed hash (a reload) misses.
  std::optional<std::array<unsigned char, 32>> key;
  if (auto gnutls = gnutls_api()) {
    std::string material = user;
    material.push_back('\0');
    material += *hash;
    material.push_back('\0');
    material += password;
    std::array<unsigned char, 32> digest{};
    if ((*gnutls)->hash_fast(GNUTLS_DIG_SHA256, material.data(), material.size(), digest.data()) == 0) key = digest;
    std::fill(material.begin(), material.end(), '\0');
  }
  if (key) {
    std::lock_guard lock(cache_mu_);
    if (cache_.contains(*key)) return outcome;
  }
  if (!bcrypt_matches(password, *hash)) {
    outcome.refusal = AuthRefusal::kWrongPassword;
    return outcome;
  }
  if (key) {
    std::lock_guard lock(cache_mu_);
    if (cache_.size() >= kMaxCachedCredentials) cache_.clear();
    cache_.insert(*key);
  }
  return outcome;
}

}  // namespace gpuscope::http
