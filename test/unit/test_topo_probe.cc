/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// Topology probing and merging: hwloc's view of a replayed 2-socket node (test/data/hwloc_2socket.xml)
// with a fake NVML, written as NCCL-format XML and checked against the tree written out by hand; a
// vendor placement-only file completed with NVML's links; and the merge of partial per-rank views.
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <string>
#include <vector>

#include "topo/topo.h"
#include "topo/topo_probe.h"

namespace {

// A fake NVML: per GPU bus id, its compute capability and the far ends of its NVLinks.
struct FakeNvml {
  std::map<std::string, int> sm;
  std::map<std::string, std::vector<topo_nvlink_end_t>> links;
  int sm_calls = 0;
  topo_gpu_info_t info() {
    topo_gpu_info_t i;
    i.ctx = this;
    i.sm = [](void *ctx, const char *busid) {
      FakeNvml *f = static_cast<FakeNvml *>(ctx);
      ++f->sm_calls;
      auto it = f->sm.find(busid);
      return it == f->sm.end() ? 0 : it->second;  // 0: NVML does not know it
    };
    i.nvlinks = [](void *ctx, const char *busid, topo_nvlink_end_t *ends, int max) {
      FakeNvml *f = static_cast<FakeNvml *>(ctx);
      auto it = f->links.find(busid);
      if (it == f->links.end()) return 0;
      int n = 0;
      for (const auto &e : it->second)
        if (n < max) ends[n++] = e;
      return n;
    };
    return i;
  }
  void link(const std::string &from, const std::string &to, int count, int nvswitch) {
    topo_nvlink_end_t e{};
    snprintf(e.busid, sizeof(e.busid), "%s", to.c_str());
    e.nvswitch = nvswitch;
    for (int k = 0; k < count; ++k) links[from].push_back(e);
  }
};

std::string text_of(const topo_xml_node_t *root) {
  size_t len = 0;
  char *t = topo_xml_text(root, &len);
  std::string s = t != nullptr ? std::string(t, len) : std::string();
  free(t);
  return s;
}

topo_xml_node_t *parse(const std::string &text) {
  topo_xml_node_t *root = nullptr;
  char e[256];
  EXPECT_EQ(0, topo_xml_parse(text.data(), text.size(), "test", &root, e, sizeof(e))) << e;
  return root;
}

topo_xml_node_t *probe_fixture(FakeNvml *nvml) {
  const std::string hw = std::string(COLL_GPU_TEST_DATA) + "/hwloc_2socket.xml";
  topo_gpu_info_t info = nvml != nullptr ? nvml->info() : topo_gpu_info_t{};
  topo_probe_opts_t o = {hw.c_str(), "/nonexistent-sysfs", nvml != nullptr ? &info : nullptr};
  topo_xml_node_t *root = nullptr;
  char e[256] = "";
  EXPECT_EQ(0, topo_probe(&o, &root, e, sizeof(e))) << e;
  return root;
}

// What NCCL would write for the fixture: one <pci> for the switch (its upstream port 01:00.0), no
// root ports, the two GPUs and the InfiniBand NIC below the switch, and the Ethernet port of socket 1
// left out because an InfiniBand port exists.
const char *kExpectedProbe = R"(<system version="1">
  <cpu numaid="0" affinity="00000003" arch="ARCH" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:01:00.0" class="0x060400">
      <pci busid="0000:03:00.0" class="0x030200">
        <gpu dev="0" sm="90">
          <nvlink target="0000:04:00.0" count="4" tclass="0x030200"/>
        </gpu>
      </pci>
      <pci busid="0000:04:00.0" class="0x030200">
        <gpu dev="1" sm="90">
          <nvlink target="0000:03:00.0" count="4" tclass="0x030200"/>
        </gpu>
      </pci>
      <pci busid="0000:05:00.0" class="0x020700">
        <nic>
          <net name="mlx5_0" dev="0" port="1"/>
        </nic>
      </pci>
    </pci>
  </cpu>
  <cpu numaid="1" affinity="0000000c" arch="ARCH" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:81:00.0" class="0x030200">
      <gpu dev="2" sm="90">
        <nvlink target="fffffff:ff:ff.0" count="2" tclass="0x068000"/>
      </gpu>
    </pci>
    <pci busid="0000:82:00.0" class="0x030200">
      <gpu dev="3" sm="90"/>
    </pci>
  </cpu>
</system>
)";

FakeNvml fixture_nvml() {
  FakeNvml f;
  for (const char *b : {"0000:03:00.0", "0000:04:00.0", "0000:81:00.0", "0000:82:00.0"}) f.sm[b] = 90;
  f.link("0000:03:00.0", "0000:04:00.0", 4, 0);  // an NVLink bridge, 4 links each way
  f.link("0000:04:00.0", "0000:03:00.0", 4, 0);
  f.link("0000:81:00.0", "fffffff:ff:ff.0", 2, 1);  // a lone switch port: no peer on it
  return f;
}

}  // namespace

TEST(TopoProbe, HwlocTreeAsNCCLWritesIt) {
  FakeNvml nvml = fixture_nvml();
  topo_xml_node_t *root = probe_fixture(&nvml);
  ASSERT_NE(nullptr, root);
  std::string expected = kExpectedProbe;
  const std::string arch = topo_xml_attr(root->children[0], "arch");  // this machine's, by design
  for (size_t at; (at = expected.find("ARCH")) != std::string::npos;) expected.replace(at, 4, arch);
  EXPECT_EQ(expected, text_of(root));
  topo_xml_free(root);
}

TEST(TopoProbe, ProbedGraphPathsRingsAndNic) {
  FakeNvml nvml = fixture_nvml();
  topo_xml_node_t *root = probe_fixture(&nvml);
  ASSERT_NE(nullptr, root);
  topo_system_t *s = nullptr;
  char e[256] = "";
  const topo_xml_node_t *roots[1] = {root};
  ASSERT_EQ(0, topo_system_build(roots, nullptr, 1, &s, e, sizeof(e))) << e;
  ASSERT_EQ(4, topo_ngpus(s));
  EXPECT_EQ(TOPO_PATH_NVL, topo_path(s, 0, 1).type);
  EXPECT_NEAR(4 * 20.6, topo_path(s, 0, 1).bw, 1e-9);
  EXPECT_EQ(TOPO_PATH_PHB, topo_path(s, 2, 3).type);  // two root ports of one CPU
  EXPECT_EQ(TOPO_PATH_SYS, topo_path(s, 1, 2).type);
  topo_path_type_t t;
  EXPECT_STREQ("mlx5_0", topo_gpu_nic(s, 0, &t));
  EXPECT_EQ(TOPO_PATH_PIX, t);
  EXPECT_STREQ("mlx5_0", topo_gpu_nic(s, 3, &t));
  EXPECT_EQ(TOPO_PATH_SYS, t);
  topo_rings_t rings;
  ASSERT_EQ(0, topo_search_rings(s, &rings, e, sizeof(e))) << e;
  ASSERT_GE(rings.nrings, 1);
  for (int r = 0; r < rings.nrings; ++r) {  // the bridged pair adjacent: the sockets crossed twice only
    int sys = 0, nvl = 0;
    for (int k = 0; k < 4; ++k) {
      const topo_path_type_t h = topo_path(s, rings.order[r][k], rings.order[r][(k + 1) % 4]).type;
      sys += h == TOPO_PATH_SYS;
      nvl += h == TOPO_PATH_NVL;
    }
    EXPECT_EQ(2, sys) << "ring " << r;
    EXPECT_EQ(1, nvl) << "ring " << r;
  }
  topo_system_free(s);
  topo_xml_free(root);
}

TEST(TopoProbe, WithoutNvmlGpusHaveNoLinks) {
  topo_xml_node_t *root = probe_fixture(nullptr);
  ASSERT_NE(nullptr, root);
  const std::string t = text_of(root);
  EXPECT_EQ(std::string::npos, t.find("<nvlink")) << t;
  EXPECT_NE(std::string::npos, t.find("<gpu dev=\"3\"/>")) << t;
  topo_xml_free(root);
}

TEST(TopoProbe, BadHwlocFileIsAnError) {
  topo_probe_opts_t o = {"/nonexistent/hwloc.xml", nullptr, nullptr};
  topo_xml_node_t *root = nullptr;
  char e[256] = "";
  EXPECT_EQ(COLL_GPU_SYSTEM_ERROR, topo_probe(&o, &root, e, sizeof(e)));
  EXPECT_EQ(nullptr, root);
  EXPECT_NE(nullptr, strstr(e, "/nonexistent/hwloc.xml")) << e;
}

// A vendor file gives PCI placement only; NVML adds the NVSwitch links of each GPU, and a second
// completion finds nothing left to do.
TEST(TopoProbe, VendorFileCompletedWithNvml) {
  topo_xml_node_t *root = nullptr;
  char e[256] = "";
  const std::string path = std::string(COLL_GPU_TEST_DATA) + "/vendor_pci_only.xml";
  ASSERT_EQ(0, topo_xml_load(path.c_str(), &root, e, sizeof(e))) << e;
  FakeNvml nvml;
  for (int g = 0; g < 8; ++g) {
    const std::string b = "0001:00:0" + std::to_string(g) + ".0";
    nvml.sm[b] = 90;
    nvml.link(b, "fffffff:ff:ff.0", 18, 1);
  }
  topo_gpu_info_t info = nvml.info();
  int completed = -1;
  EXPECT_EQ(COLL_GPU_SUCCESS, topo_complete(root, &info, &completed));
  EXPECT_EQ(8, completed);
  EXPECT_EQ(COLL_GPU_SUCCESS, topo_complete(root, &info, &completed));
  EXPECT_EQ(0, completed);
  topo_system_t *s = nullptr;
  const topo_xml_node_t *roots[1] = {root};
  ASSERT_EQ(0, topo_system_build(roots, nullptr, 1, &s, e, sizeof(e))) << e;
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(18, topo_gpu_nvlinks(s, i));
    for (int j = 0; j < 8; ++j) {
      if (i == j) continue;
      EXPECT_EQ(TOPO_PATH_NVL, topo_path(s, i, j).type) << i << "->" << j;
    }
  }
  topo_system_free(s);
  topo_xml_free(root);
}

// Each rank sees its own GPU; the union, in rank order, is the node; merging a tree into itself
// changes nothing, and the order of the views changes the order of elements, not the paths.
TEST(TopoProbe, MergeOfPartialViews) {
  const char *a = R"(<system version="1"><cpu numaid="0" affinity="ff">
      <pci busid="0000:10:00.0" class="0x060400"><pci busid="0000:11:00.0" class="0x030200">
        <gpu dev="0" sm="90"><nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/></gpu>
      </pci></pci></cpu></system>)";
  const char *b = R"(<system version="1"><cpu numaid="0">
      <pci busid="0000:10:00.0" class="0x060400" link_width="16"><pci busid="0000:12:00.0" class="0x030200">
        <gpu dev="1" sm="90"><nvlink target="FFFFFFF:FF:FF.0" count="18" tclass="0x068000"/></gpu>
      </pci></pci></cpu>
      <cpu numaid="1"><pci busid="0000:90:00.0" class="0x030200"><gpu dev="2" sm="90"/></pci></cpu></system>)";
  topo_xml_node_t *ab = parse(a), *pb = parse(b), *ba = parse(b), *pa = parse(a);
  ASSERT_EQ(0, topo_xml_merge(ab, pb));
  ASSERT_EQ(0, topo_xml_merge(ba, pa));
  const std::string merged = text_of(ab);
  EXPECT_NE(std::string::npos, merged.find("<cpu numaid=\"0\" affinity=\"ff\">")) << merged;
  EXPECT_NE(std::string::npos, merged.find("<pci busid=\"0000:10:00.0\" class=\"0x060400\" link_width=\"16\">"))
      << merged;
  topo_xml_node_t *again = parse(merged);
  ASSERT_EQ(0, topo_xml_merge(again, ab));
  EXPECT_EQ(merged, text_of(again));
  for (topo_xml_node_t *root : {ab, ba}) {
    topo_system_t *s = nullptr;
    char e[256] = "";
    const topo_xml_node_t *roots[1] = {root};
    ASSERT_EQ(0, topo_system_build(roots, nullptr, 1, &s, e, sizeof(e))) << e;
    ASSERT_EQ(3, topo_ngpus(s));
    int nvl = 0, sys = 0;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        nvl += i != j && topo_path(s, i, j).type == TOPO_PATH_NVL;
        sys += topo_path(s, i, j).type == TOPO_PATH_SYS;
      }
    EXPECT_EQ(2, nvl);  // the two NVSwitch GPUs, each way, whichever view came first
    EXPECT_EQ(4, sys);
    topo_system_free(s);
  }
  for (topo_xml_node_t *n : {ab, pb, ba, pa, again}) topo_xml_free(n);
}

TEST(TopoProbe, BuildersRespectTheBounds) {
  topo_xml_node_t *root = topo_xml_add(nullptr, "system");
  ASSERT_NE(nullptr, root);
  EXPECT_EQ(nullptr, topo_xml_add(root, std::string(TOPO_XML_MAX_NAME, 'x').c_str()));
  EXPECT_EQ(COLL_GPU_INVALID_INPUT, topo_xml_set(root, "v", std::string(TOPO_XML_MAX_VALUE, 'x').c_str()));
  EXPECT_EQ(0, topo_xml_set(root, "version", "1"));
  EXPECT_EQ(0, topo_xml_set(root, "version", "2"));  // replaced, not added
  EXPECT_EQ(1, root->nattrs);
  EXPECT_STREQ("2", topo_xml_attr(root, "version"));
  topo_xml_node_t *c = topo_xml_add(root, "cpu");
  ASSERT_NE(nullptr, c);
  topo_xml_remove(c);
  EXPECT_EQ(0, root->nchildren);
  topo_xml_free(root);
}
