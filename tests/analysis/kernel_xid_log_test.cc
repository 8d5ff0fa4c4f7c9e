// The kernel log's XID lines as dmesg, journalctl -k and /dev/kmsg write them; lines that look alike but
// are not GPU XIDs; reading a saved log and failing to read one.
#include "analysis/kernel_xid_log.h"

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "../cli/scratch_dir.h"

namespace gpuscope::analysis::kernel_xid_log_test {

TEST(PciAddress, NvmlAndKernelSpellingsOfOneGpuAreEqual) {
  const auto nvml = parse_pci_address("00000000:3B:00.0");
  const auto kernel = parse_pci_address("0000:3b:00");
  const auto short_form = parse_pci_address("3b:00.0");
  ASSERT_TRUE(nvml && kernel && short_form);
  EXPECT_EQ(*nvml, *kernel);
  EXPECT_EQ(*nvml, *short_form);
  EXPECT_EQ(nvml->bus, 0x3bu);
  EXPECT_NE(*nvml, *parse_pci_address("0000:3c:00"));
  EXPECT_NE(*nvml, *parse_pci_address("0001:3b:00"));
  // The function, where written, is kept (a bus id names one); the kernel log writes none.
  EXPECT_EQ(nvml->function, 0u);
  EXPECT_EQ(parse_pci_address("3b:00.7")->function, 7u);
  EXPECT_FALSE(kernel->function.has_value());
}

TEST(PciAddress, RejectsWhatIsNotAnAddress) {
  EXPECT_FALSE(parse_pci_address(""));
  EXPECT_FALSE(parse_pci_address("3b"));
  EXPECT_FALSE(parse_pci_address("0000:3g:00"));
  EXPECT_FALSE(parse_pci_address("0000:3b:000"));
  EXPECT_FALSE(parse_pci_address("0000:3b:00.12"));
}

TEST(KernelXidLines, ReadsDmesgJournalAndKmsgSpellings) {
  const auto xids = parse_kernel_xid_lines(
      "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
      "Jan 01 00:00:00 node-7 kernel: NVRM: Xid (PCI:0000:18:00): 48, pid='<unknown>', name=<unknown>, An "
      "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6.\n"
      "4,2211,98765432,-;NVRM: Xid (PCI:0000:c1:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)\n"
      "NVRM: Xid (0000:01:00): 31, Ch 00000010, intr 10000000. MMU Fault\n");
  ASSERT_EQ(xids.size(), 4u);
  EXPECT_EQ(xids[0].xid, 79u);
  EXPECT_EQ(xids[0].pci, (PciAddress{0, 0x3b, 0, std::nullopt}));
  EXPECT_EQ(xids[0].pci_text, "0000:3b:00");
  EXPECT_EQ(xids[0].text, "pid=1234, name=python, GPU has fallen off the bus.");
  EXPECT_EQ(xids[1].xid, 48u);
  EXPECT_EQ(xids[1].pci.bus, 0x18u);
  EXPECT_EQ(xids[2].xid, 13u);
  EXPECT_EQ(xids[2].pci.bus, 0xc1u);
  EXPECT_EQ(xids[3].xid, 31u);  // older drivers write the address without "PCI:"
  EXPECT_EQ(xids[3].pci.bus, 0x01u);
}

TEST(KernelXidLines, SkipsNvswitchSxidsOtherDriverLinesAndMalformedXids) {
  const auto xids = parse_kernel_xid_lines(
      "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error\n"
      "NVRM: GPU at PCI:0000:3b:00: GPU-5f9a0a27-0000-0000-0000-000000000000\n"
      "NVRM: GPU Board Serial Number: 1650000000000\n"
      "NVRM: Xid (PCI:0000:3b:00): seventy-nine, bad\n"
      "NVRM: Xid (PCI:zz:00): 79, bad address\n"
      "NVRM: Xid (PCI:0000:3b:00): 79x, not a number\n"
      "NVRM: Xid (PCI:0000:3b:00) 79, no colon\n"
      "NVRM: Xid (PCI:0000:3b:00): 94\r\n");
  ASSERT_EQ(xids.size(), 1u);
  EXPECT_EQ(xids[0].xid, 94u);
  EXPECT_EQ(xids[0].text, "");
}

TEST(KernelXidLog, ReadsASavedLogWhole) {
  const gpuscope::testing::ScratchDir dir;
  const std::string path = dir.write("dmesg.txt",
                                     "[    1.000000] Linux version 6.1\n"
                                     "[ 5000.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
                                     "[ 5001.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.");
  const auto log = read_kernel_xid_log(path);
  EXPECT_TRUE(log.readable);
  EXPECT_EQ(log.error, "");
  EXPECT_EQ(log.source, path);
  ASSERT_EQ(log.xids.size(), 2u);  // the last line has no newline and still counts
  EXPECT_EQ(log.xids[1].xid, 79u);
}

TEST(KernelXidLog, APipeIsReadToItsEndNotToWhatWasWrittenFirst) {
  // `--kernel-log <(journalctl -k)`: the writer may not have written when the log is opened.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([fd = fds[1]] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n";
    EXPECT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ::close(fd);
  });
  const auto log = read_kernel_xid_log("/proc/self/fd/" + std::to_string(fds[0]));
  writer.join();
  ::close(fds[0]);
  EXPECT_TRUE(log.readable) << log.error;
  ASSERT_EQ(log.xids.size(), 1u);
  EXPECT_EQ(log.xids[0].xid, 79u);
}

TEST(KernelXidLog, AMissingLogIsUnreadableWithTheReasonNotEmpty) {
  const auto log = read_kernel_xid_log("/nonexistent/gpuscope/kern.log");
  EXPECT_FALSE(log.readable);
  EXPECT_EQ(log.error, "No such file or directory");
  EXPECT_TRUE(log.xids.empty());
}

TEST(KernelXidLog, ADirectoryIsUnreadable) {
  const auto log = read_kernel_xid_log("/");
  EXPECT_FALSE(log.readable);
  EXPECT_EQ(log.error, "Is a directory");
}

}  // namespace gpuscope::analysis::kernel_xid_log_test
