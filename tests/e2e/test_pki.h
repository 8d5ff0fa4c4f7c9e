// A CA and the certificates it signs, made with the openssl CLI in a scratch directory: what the TLS
// end-to-end tests (the agent's web config, remote_write to a TLS receiver) share.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "e2e/agent_fixture.h"  // TempDir
#include "e2e/command_runner.h"

namespace gpuscope::e2e {

struct TestPki {
  TempDir dir;
  std::string path(const std::string& name) const { return (dir.path / name).string(); }

  void openssl(std::vector<std::string> args) const {
    args.insert(args.begin(), "/usr/bin/openssl");
    auto r = run_command(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  void make_ca(const std::string& name) const {
    openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path(name + ".key"), "-out", path(name + ".pem"),
             "-days", "2", "-subj", "/CN=" + name});
  }
  // A key and certificate `name` signed by `ca` for `san` (an openssl subjectAltName value), valid now, or
  // (expired) only in January 2020.
  void make_cert(const std::string& name, const std::string& ca, bool expired = false,
                 const std::string& san = "IP:127.0.0.1,DNS:localhost") const {
    openssl({"req", "-newkey", "rsa:2048", "-nodes", "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj",
             "/CN=" + name});
    dir.write(name + ".ext", "subjectAltName=" + san + "\n");
    if (!expired) {
      openssl({"x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"), "-CAkey", path(ca + ".key"),
               "-CAcreateserial", "-out", path(name + ".pem"), "-days", "1", "-extfile", path(name + ".ext")});
      return;
    }
    // `openssl ca` is the CLI that takes explicit dates: a minimal CA database for it.
    std::filesystem::create_directories(dir.path / "cadb");
    dir.write("cadb/index.txt", "");
    dir.write("cadb/serial", "1000\n");
    const auto cnf = dir.write("ca.cnf", "[ ca ]\ndefault_ca = testca\n[ testca ]\ndatabase = " + path("cadb/index.txt") +
                                             "\nnew_certs_dir = " + path("cadb") + "\nserial = " + path("cadb/serial") +
                                             "\ndefault_md = sha256\npolicy = any\n[ any ]\ncommonName = supplied\n");
    openssl({"ca", "-batch", "-config", cnf, "-cert", path(ca + ".pem"), "-keyfile", path(ca + ".key"), "-in",
             path(name + ".csr"), "-out", path(name + ".pem"), "-startdate", "20200101000000Z", "-enddate",
             "20200102000000Z", "-notext"});
  }
};

}  // namespace gpuscope::e2e
