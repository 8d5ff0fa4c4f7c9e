// Checks the deployment files in deploy/ by parsing them, not by grepping: the Kubernetes manifest
// with yaml-cpp, the systemd unit as INI. The arguments both hand to `gpuscope serve` are run
// through the built binary's own parser, so a renamed or removed flag breaks this test, not a node.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "e2e/command_runner.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const fs::path kSourceDir = GPUSCOPE_SOURCE_DIR;
const fs::path kManifest = kSourceDir / "deploy/kubernetes/gpuscope.yaml";
const fs::path kUnit = kSourceDir / "deploy/systemd/gpuscope.service";
constexpr const char* kExe = GPUSCOPE_EXE;
constexpr int kMetricsPort = 9400;

// ---- running a program ----------------------------------------------------------------------

using Result = gpuscope::e2e::CommandResult;

// Runs argv[0] (a path) with stdout and stderr captured; the child is killed by its pid after
// timeout_seconds.
Result run(const std::vector<std::string>& argv, double timeout_seconds = 20) {
  return gpuscope::e2e::run_command(argv, {}, timeout_seconds);
}

bool executable(const fs::path& p) { return access(p.c_str(), X_OK) == 0; }

std::optional<fs::path> find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / name;
    if (executable(candidate)) return candidate;
  }
  return std::nullopt;
}

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// The arguments a deployment file passes to `gpuscope serve` (starting with "serve") must be
// accepted by the real binary: with a bad --interval appended, the only complaint is --interval
// (exit 2, one line), and with a good one it gets as far as loading NVML (exit 3 for a library
// that does not exist), which only happens after every flag parsed.
void expect_serve_args_parse(const std::vector<std::string>& serve_args) {
  ASSERT_TRUE(executable(kExe)) << kExe << " is not built (cmake --build ... --target gpuscope)";
  ASSERT_FALSE(serve_args.empty());
  ASSERT_EQ(serve_args.front(), "serve");

  std::vector<std::string> bad{kExe};
  bad.insert(bad.end(), serve_args.begin(), serve_args.end());
  bad.insert(bad.end(), {"--interval", "99ms"});
  const Result r = run(bad);
  ASSERT_FALSE(r.timed_out) << "gpuscope did not stop: the bad --interval was accepted";
  EXPECT_EQ(r.exit_code, 2) << "stderr: " << r.err;
  const std::string err = trim(r.err);
  EXPECT_EQ(err.find('\n'), std::string::npos) << "expected one line, got:\n" << r.err;
  EXPECT_THAT(err, HasSubstr("--interval"));
  EXPECT_THAT(err, HasSubstr("99ms"));
  EXPECT_EQ(r.out, "");

  std::vector<std::string> good{kExe, "--nvml-lib", "/nonexistent/gpuscope-deploy-test/libnvidia-ml.so.1"};
  good.insert(good.end(), serve_args.begin(), serve_args.end());
  good.insert(good.end(), {"--interval", "1s"});
  const Result g = run(good);
  ASSERT_FALSE(g.timed_out);
  EXPECT_EQ(g.exit_code, 3) << "stderr: " << g.err;
  EXPECT_THAT(g.err, HasSubstr("cannot load the NVML library named by --nvml-lib"));
}

// ---- Kubernetes manifest --------------------------------------------------------------------

// Parses a Kubernetes quantity such as 64Mi, 32M or 1Gi into bytes.
std::optional<double> bytes(const std::string& q) {
  static const std::vector<std::pair<std::string, double>> suffixes{
      {"Ki", 1024.0}, {"Mi", 1024.0 * 1024}, {"Gi", 1024.0 * 1024 * 1024}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}};
  for (const auto& [suffix, factor] : suffixes) {
    if (q.size() > suffix.size() && q.ends_with(suffix)) return std::stod(q.substr(0, q.size() - suffix.size())) * factor;
  }
  if (!q.empty() && std::all_of(q.begin(), q.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return std::stod(q);
  return std::nullopt;
}

class Manifest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kManifest)) << kManifest;
    try {
      docs_ = YAML::LoadAllFromFile(kManifest.string());
    } catch (const YAML::Exception& e) {
      FAIL() << kManifest << ": " << e.what();
    }
    for (const auto& d : docs_) {
      ASSERT_TRUE(d.IsMap()) << "every document must be a mapping (an empty document between '---'?)";
      ASSERT_TRUE(d["kind"].IsScalar());
      by_kind_[d["kind"].as<std::string>()].push_back(d);
    }
  }

  YAML::Node only(const std::string& kind) {
    const auto it = by_kind_.find(kind);
    if (it == by_kind_.end() || it->second.size() != 1) {
      ADD_FAILURE() << "expected exactly one " << kind;
      return YAML::Node();
    }
    return it->second.front();
  }
  YAML::Node daemonset() { return only("DaemonSet"); }
  YAML::Node service() { return only("Service"); }
  YAML::Node service_monitor() { return only("ServiceMonitor"); }
  YAML::Node container() {
    const auto containers = daemonset()["spec"]["template"]["spec"]["containers"];
    if (!containers.IsSequence() || containers.size() != 1) {
      ADD_FAILURE() << "expected one container in the DaemonSet";
      return YAML::Node();
    }
    return containers[0];
  }

  std::vector<YAML::Node> docs_;
  std::map<std::string, std::vector<YAML::Node>> by_kind_;
};

std::map<std::string, std::string> string_map(const YAML::Node& n) {
  std::map<std::string, std::string> out;
  if (!n.IsMap()) return out;
  for (const auto& kv : n) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  return out;
}

// Every key/value of `selector` is among `labels` (how Kubernetes matches matchLabels).
void expect_selects(const YAML::Node& selector, const YAML::Node& labels, const std::string& what) {
  const auto sel = string_map(selector);
  const auto lab = string_map(labels);
  ASSERT_FALSE(sel.empty()) << what << ": empty selector selects everything";
  for (const auto& [k, v] : sel) {
    const auto it = lab.find(k);
    EXPECT_TRUE(it != lab.end() && it->second == v) << what << ": selector " << k << "=" << v << " matches no label";
  }
}

// A port reference (a name or a number) that must lead to the container's metrics port.
void expect_metrics_port(const YAML::Node& port, const std::string& what) {
  ASSERT_TRUE(port.IsScalar()) << what;
  const auto text = port.as<std::string>();
  EXPECT_TRUE(text == "metrics" || text == std::to_string(kMetricsPort)) << what << ": port " << text;
}

TEST_F(Manifest, HasExactlyDaemonSetServiceAndServiceMonitor) {
  ASSERT_EQ(docs_.size(), 3u);
  std::vector<std::string> kinds;
  for (const auto& [kind, nodes] : by_kind_) {
    for (std::size_t i = 0; i < nodes.size(); ++i) kinds.push_back(kind);
  }
  EXPECT_THAT(kinds, ::testing::UnorderedElementsAre("DaemonSet", "Service", "ServiceMonitor"));
  EXPECT_EQ(daemonset()["apiVersion"].as<std::string>(), "apps/v1");
  EXPECT_EQ(service()["apiVersion"].as<std::string>(), "v1");
  EXPECT_EQ(service_monitor()["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");

  const auto ns = daemonset()["metadata"]["namespace"].as<std::string>("");
  EXPECT_FALSE(ns.empty());
  for (const auto& d : docs_) {
    EXPECT_EQ(d["metadata"]["namespace"].as<std::string>(""), ns) << d["kind"].as<std::string>();
    EXPECT_FALSE(d["metadata"]["name"].as<std::string>("").empty());
  }
}

TEST_F(Manifest, SelectorsMatchThePodTemplate) {
  const auto pod_labels = daemonset()["spec"]["template"]["metadata"]["labels"];
  expect_selects(daemonset()["spec"]["selector"]["matchLabels"], pod_labels, "DaemonSet");
  expect_selects(service()["spec"]["selector"], pod_labels, "Service");
  expect_selects(service_monitor()["spec"]["selector"]["matchLabels"], service()["metadata"]["labels"],
                 "ServiceMonitor");
  const auto ns_selector = service_monitor()["spec"]["namespaceSelector"]["matchNames"];
  if (ns_selector) {
    const auto ns = service()["metadata"]["namespace"].as<std::string>();
    const auto names = ns_selector.as<std::vector<std::string>>();
    EXPECT_THAT(names, ::testing::Contains(ns));
  }
}

TEST_F(Manifest, MetricsPortIs9400EverywhereAndProbesHitHealthz) {
  const auto c = container();
  ASSERT_TRUE(c["ports"].IsSequence());
  YAML::Node metrics;
  for (const auto& p : c["ports"]) {
    if (p["name"].as<std::string>("") == "metrics") metrics.reset(p);
  }
  // A default YAML::Node is defined (null): test for the mapping a match leaves in it.
  ASSERT_TRUE(metrics.IsMap()) << "no container port named metrics";
  EXPECT_EQ(metrics["containerPort"].as<int>(), kMetricsPort);
  EXPECT_EQ(metrics["protocol"].as<std::string>("TCP"), "TCP");

  YAML::Node service_port;
  for (const auto& p : service()["spec"]["ports"]) {
    if (p["name"].as<std::string>("") == "metrics") service_port.reset(p);
  }
  ASSERT_TRUE(service_port.IsMap()) << "no Service port named metrics";
  EXPECT_EQ(service_port["port"].as<int>(), kMetricsPort);
  expect_metrics_port(service_port["targetPort"], "Service targetPort");

  const auto endpoints = service_monitor()["spec"]["endpoints"];
  ASSERT_TRUE(endpoints.IsSequence());
  ASSERT_EQ(endpoints.size(), 1u);
  EXPECT_EQ(endpoints[0]["port"].as<std::string>(), "metrics");
  EXPECT_EQ(endpoints[0]["path"].as<std::string>("/metrics"), "/metrics");
  EXPECT_EQ(endpoints[0]["interval"].as<std::string>(), "15s");

  for (const char* probe : {"livenessProbe", "readinessProbe"}) {
    const auto get = c[probe]["httpGet"];
    ASSERT_TRUE(get.IsMap()) << probe << " must be an httpGet probe";
    EXPECT_EQ(get["path"].as<std::string>(), "/healthz") << probe;
    expect_metrics_port(get["port"], probe);
  }
}

TEST_F(Manifest, RunsOnGpuNodesWithSmallResourcesAndNoPrivileges) {
  const auto pod = daemonset()["spec"]["template"]["spec"];
  const auto gpu_present = pod["nodeSelector"]["nvidia.com/gpu.present"];
  ASSERT_TRUE(gpu_present.IsScalar());
  EXPECT_EQ(gpu_present.as<std::string>(), "true");
  // Kubernetes wants label values as strings: an unquoted true is a boolean and is rejected.
  EXPECT_EQ(gpu_present.Tag(), "!") << "quote the nodeSelector value";

  bool tolerates_gpu_taint = false;
  for (const auto& t : pod["tolerations"]) tolerates_gpu_taint |= t["key"].as<std::string>("") == "nvidia.com/gpu";
  EXPECT_TRUE(tolerates_gpu_taint);

  const auto c = container();
  EXPECT_FALSE(c["image"].as<std::string>("").empty());
  std::map<std::string, std::string> env;
  for (const auto& e : c["env"]) env[e["name"].as<std::string>()] = e["value"].as<std::string>("");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "all");
  EXPECT_THAT(env["NVIDIA_DRIVER_CAPABILITIES"], HasSubstr("utility"));

  const auto requests = c["resources"]["requests"];
  const auto limits = c["resources"]["limits"];
  ASSERT_TRUE(requests["cpu"] && requests["memory"] && limits["memory"]);
  const auto request_mem = bytes(requests["memory"].as<std::string>());
  const auto limit_mem = bytes(limits["memory"].as<std::string>());
  ASSERT_TRUE(request_mem && limit_mem);
  EXPECT_LE(*request_mem, *limit_mem);
  EXPECT_LE(*limit_mem, 128.0 * 1024 * 1024);

  const auto sc = c["securityContext"];
  EXPECT_FALSE(sc["privileged"].as<bool>(false));
  EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true));
}

TEST_F(Manifest, ContainerArgsParseInTheRealBinary) {
  const auto c = container();
  EXPECT_FALSE(c["command"]) << "the image's entrypoint is gpuscope; args only";
  ASSERT_TRUE(c["args"].IsSequence());
  const auto args = c["args"].as<std::vector<std::string>>();
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args.front(), "serve");
  const auto listen = std::find(args.begin(), args.end(), "--listen");
  ASSERT_NE(listen, args.end());
  ASSERT_NE(listen + 1, args.end());
  EXPECT_EQ(*(listen + 1), ":9400");
  EXPECT_THAT(args, Not(::testing::Contains("--interval"))) << "the test appends its own --interval";
  expect_serve_args_parse(args);
}

// serve --kubernetes reads the kubelet's pod-resources socket: mounted read-only from the host, and the container
// that connects to it keeps no capability and no privilege.
TEST_F(Manifest, KubeletPodResourcesSocketIsMountedReadOnlyAndTheContainerStaysUnprivileged) {
  const auto c = container();
  const auto args = c["args"].as<std::vector<std::string>>();
  EXPECT_THAT(args, ::testing::Contains("--kubernetes"));
  std::string volume;
  for (const auto& m : c["volumeMounts"]) {
    if (m["mountPath"].as<std::string>("") != "/var/lib/kubelet/pod-resources") continue;
    volume = m["name"].as<std::string>("");
    EXPECT_TRUE(m["readOnly"].as<bool>(false)) << "the pod-resources mount must be read-only";
  }
  ASSERT_FALSE(volume.empty()) << "no volumeMount at /var/lib/kubelet/pod-resources";
  bool found = false;
  for (const auto& v : daemonset()["spec"]["template"]["spec"]["volumes"]) {
    if (v["name"].as<std::string>("") != volume) continue;
    found = true;
    EXPECT_EQ(v["hostPath"]["path"].as<std::string>(""), "/var/lib/kubelet/pod-resources");
  }
  EXPECT_TRUE(found) << "no volume named " << volume;
  const auto sc = c["securityContext"];
  EXPECT_FALSE(sc["privileged"].as<bool>(true));
  EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true));
  EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false));
  const auto drop = sc["capabilities"]["drop"].as<std::vector<std::string>>(std::vector<std::string>{});
  EXPECT_THAT(drop, ::testing::Contains("ALL"));
  EXPECT_FALSE(sc["capabilities"]["add"]) << "no capability is needed to connect to the socket";
  EXPECT_FALSE(daemonset()["spec"]["template"]["spec"]["hostNetwork"].as<bool>(false));
}

// ---- systemd unit ---------------------------------------------------------------------------

// A unit file as systemd reads it: sections of Key=Value lines; '#' and ';' start comments;
// a trailing backslash continues the line; a key may repeat.
struct UnitFile {
  std::vector<std::string> section_order;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> sections;

  std::vector<std::string> all(const std::string& section, const std::string& key) const {
    std::vector<std::string> out;
    const auto it = sections.find(section);
    if (it == sections.end()) return out;
    for (const auto& [k, v] : it->second) {
      if (k == key) out.push_back(v);
    }
    return out;
  }
  // The effective value: the last assignment wins; nullopt when unset.
  std::optional<std::string> get(const std::string& section, const std::string& key) const {
    auto values = all(section, key);
    if (values.empty()) return std::nullopt;
    return values.back();
  }
};

UnitFile parse_unit(const fs::path& path, std::string& error) {
  UnitFile unit;
  std::ifstream in(path);
  if (!in) {
    error = "cannot read " + path.string();
    return unit;
  }
  std::string current;
  int line_no = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    while (!line.empty() && line.back() == '\\' && std::getline(in, raw)) {
      ++line_no;
      line.pop_back();
      const std::string next = trim(raw);
      if (!next.empty() && (next[0] == '#' || next[0] == ';')) continue;
      line += " " + next;
    }
    if (line.front() == '[') {
      if (line.back() != ']') {
        error = "line " + std::to_string(line_no) + ": bad section header";
        return unit;
      }
      current = line.substr(1, line.size() - 2);
      if (!unit.sections.contains(current)) unit.section_order.push_back(current);
      unit.sections[current];
      continue;
    }
    const auto eq = line.find('=');
    if (current.empty() || eq == std::string::npos || eq == 0) {
      error = "line " + std::to_string(line_no) + ": expected Key=Value in a section: " + line;
      return unit;
    }
    unit.sections[current].emplace_back(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
  }
  return unit;
}

// Splits an Exec*= command line as systemd does for the simple cases: whitespace-separated words,
// double or single quotes around a word, and the leading special prefixes (-, @, :, +, !) dropped.
std::vector<std::string> split_command(std::string value) {
  while (!value.empty() && std::string_view("-@:+!").find(value.front()) != std::string_view::npos) value.erase(0, 1);
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (const char ch : value) {
    if (quote != 0) {
      if (ch == quote) {
        quote = 0;
      } else {
        word += ch;
      }
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      if (in_word) words.push_back(std::exchange(word, {}));
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

bool is_yes(const std::optional<std::string>& v) {
  return v && (*v == "yes" || *v == "true" || *v == "on" || *v == "1");
}

class SystemdUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kUnit)) << kUnit;
    std::string error;
    unit_ = parse_unit(kUnit, error);
    ASSERT_EQ(error, "") << kUnit;
  }
  UnitFile unit_;
};

TEST_F(SystemdUnit, HasUnitServiceAndInstallSections) {
  EXPECT_THAT(unit_.section_order, ::testing::ElementsAre("Unit", "Service", "Install"));
  EXPECT_TRUE(unit_.get("Unit", "Description"));
  EXPECT_EQ(unit_.get("Install", "WantedBy"), "multi-user.target");
}

TEST_F(SystemdUnit, StartsServeAndReloadsWithHup) {
  EXPECT_EQ(unit_.get("Service", "Type"), "simple");
  ASSERT_EQ(unit_.all("Service", "ExecStart").size(), 1u);
  const auto start = split_command(*unit_.get("Service", "ExecStart"));
  ASSERT_GE(start.size(), 2u);
  EXPECT_TRUE(start.front().starts_with("/")) << "systemd wants an absolute path: " << start.front();
  EXPECT_EQ(fs::path(start.front()).filename(), "gpuscope");
  const std::vector<std::string> args(start.begin() + 1, start.end());
  EXPECT_EQ(args.front(), "serve");
  const auto listen = std::find(args.begin(), args.end(), "--listen");
  ASSERT_NE(listen, args.end());
  ASSERT_NE(listen + 1, args.end());
  EXPECT_EQ(*(listen + 1), ":9400");
  expect_serve_args_parse(args);

  const auto reload = split_command(unit_.get("Service", "ExecReload").value_or(""));
  ASSERT_FALSE(reload.empty());
  EXPECT_EQ(fs::path(reload.front()).filename(), "kill");
  EXPECT_THAT(reload, ::testing::Contains("-HUP"));
  EXPECT_EQ(reload.back(), "$MAINPID");
  EXPECT_EQ(unit_.get("Service", "Restart"), "on-failure");
}

// Hardening must leave NVML working: the /dev/nvidia* nodes reachable, /proc/driver/nvidia readable.
TEST_F(SystemdUnit, IsHardenedWithoutLosingTheGpus) {
  EXPECT_TRUE(is_yes(unit_.get("Service", "DynamicUser")) || unit_.get("Service", "User"))
      << "the agent does not need root";
  EXPECT_THAT(unit_.get("Service", "SupplementaryGroups").value_or(""), HasSubstr("video"));
  EXPECT_TRUE(is_yes(unit_.get("Service", "NoNewPrivileges")));
  EXPECT_EQ(unit_.get("Service", "ProtectSystem"), "strict");
  EXPECT_TRUE(unit_.get("Service", "ProtectHome"));
  EXPECT_TRUE(is_yes(unit_.get("Service", "PrivateTmp")));
  EXPECT_TRUE(unit_.get("Service", "MemoryMax"));
  EXPECT_TRUE(unit_.get("Service", "CPUQuota"));

  EXPECT_FALSE(is_yes(unit_.get("Service", "PrivateDevices"))) << "hides /dev/nvidia*";
  const auto policy = unit_.get("Service", "DevicePolicy").value_or("auto");
  const bool allows_nvidia = std::ranges::any_of(unit_.all("Service", "DeviceAllow"), [](const std::string& v) {
    return v.find("nvidia") != std::string::npos;
  });
  EXPECT_TRUE(policy == "auto" || allows_nvidia) << "DevicePolicy=" << policy << " without an nvidia DeviceAllow";
  // ProtectClock=yes implies DeviceAllow=char-rtc, which on systemd < 252 closes every other device.
  EXPECT_TRUE(!is_yes(unit_.get("Service", "ProtectClock")) || allows_nvidia);
  EXPECT_NE(unit_.get("Service", "ProcSubset"), "pid") << "hides /proc/driver/nvidia";
  EXPECT_NE(unit_.get("Service", "ProtectProc"), "invisible") << "hides GPU processes' /proc entries";
  EXPECT_FALSE(is_yes(unit_.get("Service", "PrivateNetwork"))) << "Prometheus must reach port 9400";
}

TEST_F(SystemdUnit, SystemdAnalyzeVerifyAcceptsIt) {
  const auto analyze = find_in_path("systemd-analyze");
  if (!analyze) GTEST_SKIP() << "systemd-analyze is not installed";
  ASSERT_TRUE(executable(kExe)) << kExe << " is not built";

  // systemd-analyze verify checks that ExecStart's program exists: point it at the built binary.
  const auto start = split_command(*unit_.get("Service", "ExecStart"));
  // Only the assignment itself: the file's comments show ExecStart= lines too.
  std::ifstream in(kUnit);
  std::string content;
  int replaced = 0;
  for (std::string line; std::getline(in, line);) {
    const std::string from = "ExecStart=" + start.front();
    if (line.starts_with(from)) {
      line.replace(0, from.size(), std::string("ExecStart=") + kExe);
      ++replaced;
    }
    content += line + "\n";
  }
  ASSERT_EQ(replaced, 1);

  char dir_template[] = "/tmp/gpuscope-deploy-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const fs::path dir = dir_template;
  const fs::path copy = dir / "gpuscope.service";
  {
    std::ofstream out(copy);
    out << content;
  }
  const Result r = run({analyze->string(), "verify", copy.string()}, 60);
  std::error_code ec;
  fs::remove_all(dir, ec);

  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // verify exits 0 on unknown keys and bad values, only warning about them, with the file's path.
  std::stringstream lines(r.out + r.err);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_THAT(line, Not(HasSubstr(copy.filename().string()))) << "systemd-analyze complains";
  }
}

}  // namespace
