/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// Topology: NCCL-format XML fixtures (test/data) read into the system graph; GPU path types; the rings
// the search picks, checked against what a topology expert would defend; the write -> read round trip;
// and errors that name the line of a malformed file.
#include <gtest/gtest.h>
#include <stdio.h>

#include <algorithm>
#include <array>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "topo/topo.h"

namespace {

struct Topo {
  topo_xml_node_t *xml = nullptr;
  topo_system_t *sys = nullptr;
  topo_rings_t rings{};
  std::string err;
  topo_xml_node_t *xml2 = nullptr;  // a second node
  explicit Topo(const std::string &name, const std::string &second = "") {
    char e[512] = "";
    const std::string path = std::string(COLL_GPU_TEST_DATA) + "/" + name;
    const std::string path2 = std::string(COLL_GPU_TEST_DATA) + "/" + second;
    const char *files[2] = {name.c_str(), second.c_str()};
    if (topo_xml_load(path.c_str(), &xml, e, sizeof(e)) != 0 ||
        (!second.empty() && topo_xml_load(path2.c_str(), &xml2, e, sizeof(e)) != 0)) {
      err = e;
      return;
    }
    const topo_xml_node_t *roots[2] = {xml, xml2};
    if (topo_system_build(roots, files, second.empty() ? 1 : 2, &sys, e, sizeof(e)) != 0 ||
        topo_search_rings(sys, &rings, e, sizeof(e)) != 0)
      err = e;
  }
  ~Topo() {
    topo_system_free(sys);
    topo_xml_free(xml);
    topo_xml_free(xml2);
  }
  int n() const { return topo_ngpus(sys); }
  topo_path_t hop(int r, int k) const { return topo_path(sys, rings.order[r][k], rings.order[r][(k + 1) % n()]); }
};

// Every ring visits every GPU once.
void expect_rings_cover(const Topo &t) {
  ASSERT_GE(t.rings.nrings, 1);
  for (int r = 0; r < t.rings.nrings; ++r) {
    std::set<int> seen(t.rings.order[r], t.rings.order[r] + t.n());
    EXPECT_EQ((size_t)t.n(), seen.size()) << "ring " << r;
    EXPECT_EQ(0, t.rings.order[r][0]);
    EXPECT_GT(t.rings.speed[r], 0);
  }
}

std::string parse_error(const std::string &text) {
  topo_xml_node_t *root = nullptr;
  char e[512] = "";
  topo_system_t *s = nullptr;
  if (topo_xml_parse(text.data(), text.size(), "bad.xml", &root, e, sizeof(e)) == 0) {
    const topo_xml_node_t *roots[1] = {root};
    const char *files[1] = {"bad.xml"};
    if (topo_system_build(roots, files, 1, &s, e, sizeof(e)) == 0) {
      topo_system_free(s);
      e[0] = '\0';
    }
    topo_xml_free(root);
  }
  return e;
}

const char *kGpu = "<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"90\"/></pci>";

}  // namespace

TEST(Topo, NVSwitchNode) {
  Topo t("nvswitch8_h200.xml");
  ASSERT_EQ("", t.err);
  ASSERT_EQ(8, t.n());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(18, topo_gpu_nvlinks(t.sys, i));
    for (int j = 0; j < 8; ++j) {
      const topo_path_t p = topo_path(t.sys, i, j);
      EXPECT_EQ(i == j ? TOPO_PATH_LOC : TOPO_PATH_NVL, p.type) << i << "->" << j;
      if (i != j) {
        EXPECT_NEAR(18 * 20.6, p.bw, 1e-9);
      }
    }
  }
  // one ring takes all of every GPU's NVSwitch bandwidth; in GPU order, the first among equals
  expect_rings_cover(t);
  ASSERT_EQ(1, t.rings.nrings);
  EXPECT_NEAR(18 * 20.6, t.rings.speed[0], 1e-9);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(k, t.rings.order[0][k]);
}

TEST(Topo, HybridCubeMeshRingsStayOnNVLink) {
  Topo t("dgx1_v100.xml");
  ASSERT_EQ("", t.err);
  ASSERT_EQ(8, t.n());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(6, topo_gpu_nvlinks(t.sys, i));
  EXPECT_EQ(TOPO_PATH_NVL, topo_path(t.sys, 0, 3).type);
  EXPECT_NEAR(40, topo_path(t.sys, 0, 3).bw, 1e-9);  // two links
  EXPECT_EQ(TOPO_PATH_NVB, topo_path(t.sys, 0, 5).type);
  expect_rings_cover(t);
  // the first ring runs on doubled links only; every hop of every ring is a direct NVLink
  EXPECT_NEAR(40, t.rings.speed[0], 1e-9);
  EXPECT_GE(t.rings.nrings, 2);
  for (int r = 0; r < t.rings.nrings; ++r)
    for (int k = 0; k < 8; ++k) EXPECT_EQ(TOPO_PATH_NVL, t.hop(r, k).type) << "ring " << r << " hop " << k;
}

TEST(Topo, PCIeTwoSocketsCrossTwice) {
  Topo t("pcie8_2socket.xml");
  ASSERT_EQ("", t.err);
  ASSERT_EQ(8, t.n());
  EXPECT_EQ(TOPO_PATH_PIX, topo_path(t.sys, 0, 1).type);
  EXPECT_EQ(TOPO_PATH_PHB, topo_path(t.sys, 0, 2).type);
  EXPECT_EQ(TOPO_PATH_SYS, topo_path(t.sys, 0, 4).type);
  expect_rings_cover(t);
  for (int r = 0; r < t.rings.nrings; ++r) {
    int sys = 0, pix = 0;
    for (int k = 0; k < 8; ++k) {
      sys += t.hop(r, k).type == TOPO_PATH_SYS;
      pix += t.hop(r, k).type == TOPO_PATH_PIX;
    }
    EXPECT_EQ(2, sys) << "ring " << r << ": the fewest socket crossings";
    EXPECT_EQ(4, pix) << "ring " << r << ": GPUs of one switch next to each other";
  }
}

TEST(Topo, BridgedPairsAdjacent) {
  Topo t("pcie4_nvbridge.xml");
  ASSERT_EQ("", t.err);
  ASSERT_EQ(4, t.n());
  expect_rings_cover(t);
  for (int r = 0; r < t.rings.nrings; ++r) {
    int nvl = 0;
    for (int k = 0; k < 4; ++k) {
      const int a = topo_gpu_label(t.sys, t.rings.order[r][k]),
                b = topo_gpu_label(t.sys, t.rings.order[r][(k + 1) % 4]);
      const bool bridged = (a / 2 == b / 2);  // ranks 0-1 and 2-3 share a bridge
      EXPECT_EQ(bridged, t.hop(r, k).type == TOPO_PATH_NVL);
      nvl += bridged;
    }
    EXPECT_EQ(2, nvl) << "ring " << r << ": both bridges in the ring";
  }
}

TEST(Topo, VendorPlacementOnly) {
  Topo t("vendor_pci_only.xml");
  ASSERT_EQ("", t.err);
  ASSERT_EQ(8, t.n());
  EXPECT_STREQ("0001:00:05.0", topo_gpu_busid(t.sys, 5));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(0, topo_gpu_nvlinks(t.sys, i));
    EXPECT_EQ(i, topo_gpu_label(t.sys, i));
    for (int j = 0; j < 8; ++j)
      if (i != j) {
        EXPECT_GE(topo_path(t.sys, i, j).type, TOPO_PATH_PIX);
      }
  }
  expect_rings_cover(t);
}

// Two nodes of 4 GPUs on NVSwitch, each with two NICs (one per PCIe switch), the same bus ids on both.
TEST(Topo, TwoNodesCrossTwiceThroughTheNearestNIC) {
  Topo t("twonode_a.xml", "twonode_b.xml");
  ASSERT_EQ("", t.err);
  ASSERT_EQ(8, t.n());
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(g / 4, topo_gpu_node(t.sys, g));
    EXPECT_EQ(g, topo_gpu_label(t.sys, g));
    topo_path_type_t type;
    const char *nic = topo_gpu_nic(t.sys, g, &type);
    ASSERT_NE(nullptr, nic);
    EXPECT_STREQ(g % 4 < 2 ? "mlx5_0" : "mlx5_1", nic) << "GPU " << g << ": the NIC behind its own switch";
    EXPECT_EQ(TOPO_PATH_PIX, type);
    for (int h = 0; h < 8; ++h) {
      const topo_path_type_t want = g == h ? TOPO_PATH_LOC : g / 4 == h / 4 ? TOPO_PATH_NVL : TOPO_PATH_NET;
      EXPECT_EQ(want, topo_path(t.sys, g, h).type) << g << "->" << h;
    }
  }
  EXPECT_NEAR(25, topo_path(t.sys, 0, 4).bw, 1e-9);  // a 200 Gb/s port
  expect_rings_cover(t);
  EXPECT_GE(t.rings.nrings, 2) << "a ring per pair of NICs";
  for (int r = 0; r < t.rings.nrings; ++r) {
    int net = 0;
    for (int k = 0; k < 8; ++k) {
      net += t.hop(r, k).type == TOPO_PATH_NET;
      EXPECT_NE(TOPO_PATH_SYS, t.hop(r, k).type);
    }
    EXPECT_EQ(2, net) << "ring " << r << ": leaves each node once";
  }
}

TEST(Topo, SeveralNodesNeedNICs) {
  Topo t("twonode_a.xml", "pcie4_nvbridge.xml");
  EXPECT_EQ(0u, t.err.find("pcie4_nvbridge.xml:5: no NIC (<nic><net>) in this node")) << t.err;
}

// write -> read gives the same text, paths and rings (for every fixture)
TEST(Topo, WriteReadRoundTrip) {
  for (const char *name :
       {"nvswitch8_h200.xml", "dgx1_v100.xml", "pcie8_2socket.xml", "pcie4_nvbridge.xml", "vendor_pci_only.xml"}) {
    Topo a(name);
    ASSERT_EQ("", a.err) << name;
    char *text1 = nullptr, *text2 = nullptr;
    size_t len1 = 0, len2 = 0;
    FILE *f = open_memstream(&text1, &len1);
    ASSERT_EQ(0, topo_xml_write(a.xml, f));
    fclose(f);
    topo_xml_node_t *root = nullptr;
    topo_system_t *sys = nullptr;
    char e[512] = "";
    ASSERT_EQ(0, topo_xml_parse(text1, len1, "dump", &root, e, sizeof(e))) << e;
    f = open_memstream(&text2, &len2);
    ASSERT_EQ(0, topo_xml_write(root, f));
    fclose(f);
    EXPECT_EQ(std::string(text1, len1), std::string(text2, len2)) << name;
    const topo_xml_node_t *roots[1] = {root};
    const char *files[1] = {"dump"};
    ASSERT_EQ(0, topo_system_build(roots, files, 1, &sys, e, sizeof(e))) << e;
    topo_rings_t rings;
    ASSERT_EQ(0, topo_search_rings(sys, &rings, e, sizeof(e)));
    ASSERT_EQ(a.n(), topo_ngpus(sys));
    for (int i = 0; i < a.n(); ++i)
      for (int j = 0; j < a.n(); ++j) {
        EXPECT_EQ(topo_path(a.sys, i, j).type, topo_path(sys, i, j).type);
        EXPECT_EQ(topo_path(a.sys, i, j).bw, topo_path(sys, i, j).bw);
      }
    ASSERT_EQ(a.rings.nrings, rings.nrings);
    for (int r = 0; r < rings.nrings; ++r)
      for (int k = 0; k < a.n(); ++k) EXPECT_EQ(a.rings.order[r][k], rings.order[r][k]);
    topo_system_free(sys);
    topo_xml_free(root);
    free(text1);
    free(text2);
  }
}

TEST(Topo, EntitiesReadAndWritten) {
  const std::string text = "<system version=\"1\"><cpu numaid=\"0\" vendor=\"A&amp;B &quot;x&quot;\">" +
                           std::string(kGpu) + "</cpu></system>";
  topo_xml_node_t *root = nullptr;
  char e[256];
  ASSERT_EQ(0, topo_xml_parse(text.data(), text.size(), "t", &root, e, sizeof(e))) << e;
  EXPECT_STREQ("A&B \"x\"", topo_xml_attr(root->children[0], "vendor"));
  char *out = nullptr;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  topo_xml_write(root, f);
  fclose(f);
  EXPECT_NE(std::string::npos, std::string(out, len).find("vendor=\"A&amp;B &quot;x&quot;\""));
  free(out);
  topo_xml_free(root);
}

// A GPU's CPUs are those of the <cpu> it hangs from, NCCL's affinity words read lowest CPU first.
TEST(Topo, GpuCpusComeFromItsCpuAffinity) {
  const std::string text =
      "<system version=\"1\">"
      "<cpu numaid=\"0\" affinity=\"0000ff00,00000003\"><pci busid=\"0000:18:00.0\" class=\"0x060400\">"
      "<pci busid=\"0000:1A:00.0\" class=\"0x030200\"/></pci><pci busid=\"0000:1c:00.0\" class=\"0x020000\"/></cpu>"
      "<cpu numaid=\"1\" affinity=\"0xf0\"><pci busid=\"0000:3d:00.0\" class=\"0x030200\"/></cpu>"
      "<cpu numaid=\"2\" affinity=\"12,zz\"><pci busid=\"0000:5d:00.0\" class=\"0x030200\"/></cpu>"
      "<cpu numaid=\"3\"><pci busid=\"0000:7d:00.0\" class=\"0x030200\"/></cpu></system>";
  topo_xml_node_t *root = nullptr;
  char e[256];
  ASSERT_EQ(0, topo_xml_parse(text.data(), text.size(), "t", &root, e, sizeof(e))) << e;
  int cpus[64];
  ASSERT_EQ(10, topo_xml_gpu_cpus(root, "0000:1a:00.0", cpus, 64));  // bus ids in either case
  EXPECT_EQ(std::vector<int>(cpus, cpus + 10), (std::vector<int>{0, 1, 40, 41, 42, 43, 44, 45, 46, 47}));
  ASSERT_EQ(3, topo_xml_gpu_cpus(root, "0000:1a:00.0", cpus, 3));  // at most max
  EXPECT_EQ(std::vector<int>(cpus, cpus + 3), (std::vector<int>{0, 1, 40}));
  ASSERT_EQ(4, topo_xml_gpu_cpus(root, "0000:3d:00.0", cpus, 64));
  EXPECT_EQ(std::vector<int>(cpus, cpus + 4), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(0, topo_xml_gpu_cpus(root, "0000:1c:00.0", cpus, 64)) << "a NIC is not a GPU";
  EXPECT_EQ(0, topo_xml_gpu_cpus(root, "0000:5d:00.0", cpus, 64)) << "an affinity that is not hex words";
  EXPECT_EQ(0, topo_xml_gpu_cpus(root, "0000:7d:00.0", cpus, 64)) << "no affinity";
  EXPECT_EQ(0, topo_xml_gpu_cpus(root, "0000:99:00.0", cpus, 64)) << "no such GPU";
  topo_xml_free(root);
}

// A GPU's NIC port is the nearest one the filter takes: below its PCI switch, then its <cpu>, then anywhere, the
// first in file order at each; a port's CPUs are those of the <cpu> it hangs from. Agrees with the topology's
// choice (topo_gpu_nic) on a fixture.
TEST(Topo, GpuNetIsTheNearestPortTaken) {
  const std::string text =
      "<system version=\"1\">"
      "<cpu numaid=\"0\" affinity=\"0000000f\">"
      "<pci busid=\"0000:17:00.0\" class=\"0x060400\"><nic><net name=\"eth9\" dev=\"0\"/></nic></pci>"
      "<pci busid=\"0000:18:00.0\" class=\"0x060400\">"
      "<pci busid=\"0000:1a:00.0\" class=\"0x030200\"/><pci busid=\"0000:1b:00.0\" class=\"0x020000\">"
      "<nic><net name=\"mlx5_0\" dev=\"1\" port=\"1\"/><net name=\"mlx5_0\" dev=\"2\" port=\"2\"/></nic></pci></pci>"
      "<pci busid=\"0000:1c:00.0\" class=\"0x030200\"/></cpu>"
      "<cpu numaid=\"1\" affinity=\"000000f0\"><pci busid=\"0000:3d:00.0\" class=\"0x030200\"/>"
      "<nic><net name=\"mlx5_1\" dev=\"3\"/></nic></cpu>"
      "<cpu numaid=\"2\" affinity=\"00000f00\"><pci busid=\"0000:5d:00.0\" class=\"0x030200\"/></cpu></system>";
  topo_xml_node_t *root = nullptr;
  char e[256];
  ASSERT_EQ(0, topo_xml_parse(text.data(), text.size(), "t", &root, e, sizeof(e))) << e;
  auto port = [root](const char *busid, const char *skip) -> std::string {
    auto take = [](const char *name, void *ctx) { return strcmp(name, (const char *)ctx) != 0 ? 1 : 0; };
    const topo_xml_node_t *net = topo_xml_gpu_net(root, busid, skip != nullptr ? +take : nullptr, (void *)skip);
    return net != nullptr ? std::string(topo_xml_attr(net, "name")) + "/" + topo_xml_attr(net, "dev") : "none";
  };
  EXPECT_EQ("mlx5_0/1", port("0000:1a:00.0", nullptr)) << "its switch's, the first port";
  EXPECT_EQ("eth9/0", port("0000:1A:00.0", "mlx5_0")) << "the filter: then its CPU's";
  EXPECT_EQ("eth9/0", port("0000:1c:00.0", nullptr)) << "no switch: its CPU's, the first in file order";
  EXPECT_EQ("mlx5_0/1", port("0000:1c:00.0", "eth9"));
  EXPECT_EQ("mlx5_1/3", port("0000:3d:00.0", nullptr)) << "a NIC straight under the CPU";
  EXPECT_EQ("eth9/0", port("0000:3d:00.0", "mlx5_1")) << "only another CPU's";
  EXPECT_EQ("eth9/0", port("0000:5d:00.0", nullptr)) << "none near: the system's first";
  EXPECT_EQ("none", port("0000:99:00.0", nullptr)) << "no such GPU";
  EXPECT_EQ("none", port("0000:1b:00.0", nullptr)) << "a NIC is not a GPU";
  int cpus[64];
  ASSERT_EQ(4, topo_xml_cpus_near(topo_xml_gpu_net(root, "0000:3d:00.0", nullptr, nullptr), cpus, 64));
  EXPECT_EQ(std::vector<int>(cpus, cpus + 4), (std::vector<int>{4, 5, 6, 7}));
  ASSERT_EQ(4, topo_xml_cpus_near(topo_xml_gpu_net(root, "0000:5d:00.0", nullptr, nullptr), cpus, 64));
  EXPECT_EQ(std::vector<int>(cpus, cpus + 4), (std::vector<int>{0, 1, 2, 3})) << "the port's CPUs, not the GPU's";
  EXPECT_EQ(0, topo_xml_cpus_near(nullptr, cpus, 64));
  topo_xml_free(root);

  Topo t("pcie8_2socket.xml");
  ASSERT_EQ("", t.err);
  for (int g = 0; g < t.n(); ++g) {
    topo_path_type_t type;
    const char *nic = topo_gpu_nic(t.sys, g, &type);
    ASSERT_NE(nullptr, nic);
    const topo_xml_node_t *net = topo_xml_gpu_net(t.xml, topo_gpu_busid(t.sys, g), nullptr, nullptr);
    ASSERT_NE(nullptr, net) << g;
    EXPECT_STREQ(nic, topo_xml_attr(net, "name")) << "GPU " << g;
  }
}

// Each malformed input is refused with its line and what is wrong.
TEST(Topo, MalformedFilesNameTheLine) {
  const std::string g = kGpu;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"<system version=\"1\">\n<cpu numaid=\"0\">\n", "bad.xml:3: <cpu> of line 2 is not closed"},
      {"<system version=\"1\">\n<cpu numaid=\"0\">\n</pci>\n", "bad.xml:3: </pci> closes <cpu> of line 2"},
      {"<system version=1>", "bad.xml:1: expected a quoted attribute value"},
      {"<system version=\"1\" version=\"1\"/>", "bad.xml:1: attribute version given twice in <system>"},
      {"<system a=\"&nbsp;\"/>", "bad.xml:1: unknown entity in an attribute value"},
      {"<system version=\"1\">\ntext\n</system>", "bad.xml:2: unexpected text outside a tag"},
      {"<system/>\n<system/>", "bad.xml:2: a second root element <system>"},
      {"<!-- open", "bad.xml:1: unterminated comment"},
      {"", "bad.xml:1: no element"},
      {"<topology/>", "bad.xml:1: the root element is <topology>, not <system>"},
      {"<system version=\"2\"/>", "bad.xml:1: <system version=\"2\">: expected an integer from 1 to 1"},
      {"<system version=\"1\"><cpu numaid=\"0\"/></system>", "bad.xml:1: no GPU"},
      {"<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" class=\"0x030200\">\n<gpu dev=\"0\">\n"
       "<nvlink target=\"0000:99:00.0\" count=\"2\" tclass=\"0x030200\"/>\n</gpu></pci></cpu></system>",
       "bad.xml:5: <nvlink target=\"0000:99:00.0\">: neither a GPU of this file nor an NVSwitch"},
      {"<system version=\"1\"><cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_width=\"99\"/>"
       "</cpu></system>",
       "bad.xml:2: <pci link_width=\"99\">: expected an integer from 1 to 32"},
      {"<system version=\"1\"><cpu numaid=\"0\">\n<pci class=\"0x030200\"/></cpu></system>",
       "bad.xml:2: <pci> without busid"},
      {"<system version=\"1\"><cpu numaid=\"0\">\n<gpu dev=\"0\"/></cpu></system>",
       "bad.xml:2: <gpu> outside a <pci> element"},
      {"<system version=\"1\"><cpu numaid=\"0\">" + g +
           "\n<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"fast\"/>"
           "</cpu></system>",
       "bad.xml:2: <pci link_speed=\"fast\">: expected a rate"},
  };
  for (const auto &c : cases) {
    const std::string e = parse_error(c.first);
    EXPECT_EQ(0u, e.find(c.second)) << "input: " << c.first << "\nerror: " << e;
  }
}

TEST(Topo, BoundsAreEnforced) {
  std::string deep = "<system version=\"1\">";
  for (int i = 0; i < TOPO_XML_MAX_DEPTH + 1; ++i) deep += "<pci busid=\"x\">";
  EXPECT_NE(std::string::npos, parse_error(deep).find("nested deeper than"));
  std::string many = "<system version=\"1\">";
  for (int i = 0; i < TOPO_XML_MAX_NODES + 1; ++i) many += "<x/>";
  many += "</system>";
  EXPECT_NE(std::string::npos, parse_error(many).find("more than 4096 elements"));
  EXPECT_NE(std::string::npos, parse_error("<system a=\"" + std::string(300, 'v') + "\"/>").find("longer than 255"));
  std::string attrs = "<system";
  for (int i = 0; i <= TOPO_XML_MAX_ATTRS; ++i) attrs += " a" + std::to_string(i) + "=\"1\"";
  EXPECT_NE(std::string::npos, parse_error(attrs + "/>").find("more than 32 attributes"));
  EXPECT_NE(std::string::npos, parse_error(std::string(TOPO_XML_MAX_BYTES + 1, ' ')).find("larger than"));
  topo_xml_node_t *root = nullptr;
  char e[256];
  EXPECT_EQ(COLL_GPU_SYSTEM_ERROR, topo_xml_load("/nonexistent/topo.xml", &root, e, sizeof(e)));
  EXPECT_STREQ("/nonexistent/topo.xml: cannot open it", e);
}

// More GPUs than the exhaustive search takes: an error, not hours of search.
// Above the exhaustive search's 10 GPUs the rings are grown greedily: 11 GPUs on one CPU's root ports
// (all PHB, all alike) give the ring in index order.
TEST(Topo, GreedyAboveTenGpus) {
  std::string text = "<system version=\"1\"><cpu numaid=\"0\">";
  for (int i = 0; i < TOPO_SEARCH_MAX_GPUS + 1; ++i) {
    char busid[32];
    snprintf(busid, sizeof(busid), "0000:%02x:00.0", i + 1);
    text += std::string("<pci busid=\"") + busid + "\" class=\"0x030200\"/>";
  }
  text += "</cpu></system>";
  topo_xml_node_t *root = nullptr;
  topo_system_t *sys = nullptr;
  char e[256];
  ASSERT_EQ(0, topo_xml_parse(text.data(), text.size(), "t", &root, e, sizeof(e))) << e;
  const topo_xml_node_t *roots[1] = {root};
  const char *files[1] = {"t"};
  ASSERT_EQ(0, topo_system_build(roots, files, 1, &sys, e, sizeof(e))) << e;
  topo_rings_t rings;
  ASSERT_EQ(0, topo_search_rings(sys, &rings, e, sizeof(e))) << e;
  ASSERT_GE(rings.nrings, 1);
  for (int k = 0; k < TOPO_SEARCH_MAX_GPUS + 1; ++k) EXPECT_EQ(k, rings.order[0][k]);
  topo_system_free(sys);
  topo_xml_free(root);
}

// Three nodes of 4 GPUs (12, greedy): every ring keeps each node's GPUs together (three NET hops),
// and inside a node every hop is NVLink.
TEST(Topo, GreedyKeepsNodesTogether) {
  const std::string a = std::string(COLL_GPU_TEST_DATA) + "/twonode_a.xml";
  const std::string b = std::string(COLL_GPU_TEST_DATA) + "/twonode_b.xml";
  topo_xml_node_t *x[3] = {nullptr, nullptr, nullptr};
  char e[256];
  ASSERT_EQ(0, topo_xml_load(a.c_str(), &x[0], e, sizeof(e))) << e;
  ASSERT_EQ(0, topo_xml_load(b.c_str(), &x[1], e, sizeof(e))) << e;
  ASSERT_EQ(0, topo_xml_load(a.c_str(), &x[2], e, sizeof(e))) << e;
  const topo_xml_node_t *roots[3] = {x[0], x[1], x[2]};
  const char *files[3] = {"a", "b", "c"};
  topo_system_t *sys = nullptr;
  ASSERT_EQ(0, topo_system_build(roots, files, 3, &sys, e, sizeof(e))) << e;
  ASSERT_EQ(12, topo_ngpus(sys));
  topo_rings_t rings;
  ASSERT_EQ(0, topo_search_rings(sys, &rings, e, sizeof(e))) << e;
  ASSERT_GE(rings.nrings, 1);
  for (int r = 0; r < rings.nrings; ++r) {
    std::set<int> seen(rings.order[r], rings.order[r] + 12);
    EXPECT_EQ(12u, seen.size()) << "ring " << r;
    int net = 0;
    for (int k = 0; k < 12; ++k) {
      const topo_path_type_t t = topo_path(sys, rings.order[r][k], rings.order[r][(k + 1) % 12]).type;
      net += t == TOPO_PATH_NET;
      EXPECT_TRUE(t == TOPO_PATH_NET || t == TOPO_PATH_NVL) << "ring " << r << " hop " << k;
    }
    EXPECT_EQ(3, net) << "ring " << r;
  }
  topo_system_free(sys);
  for (auto *n : x) topo_xml_free(n);
}

namespace {

// A tree over every GPU: one root, each other GPU in its parent's children, at most TOPO_TREE_ARITY
// children, every GPU reached from the root; the links between nodes are the nodes' count less one.
void expect_tree(const Topo &t, const topo_trees_t &tr, int k, int *root, int *net_links) {
  const int n = t.n();
  *root = -1;
  *net_links = 0;
  for (int g = 0; g < n; ++g) {
    const int up = tr.up[k][g];
    if (up < 0) {
      EXPECT_EQ(-1, *root) << "tree " << k << ": a second root " << g;
      *root = g;
      continue;
    }
    int listed = 0;
    for (int c = 0; c < TOPO_TREE_ARITY; ++c) listed += tr.down[k][up][c] == g;
    EXPECT_EQ(1, listed) << "tree " << k << ": GPU " << g << " not a child of its parent " << up;
    *net_links += topo_gpu_node(t.sys, g) != topo_gpu_node(t.sys, up);
  }
  ASSERT_GE(*root, 0) << "tree " << k;
  std::vector<int> todo{*root}, seen(n, 0);
  while (!todo.empty()) {
    const int g = todo.back();
    todo.pop_back();
    ++seen[g];
    for (int c = 0; c < TOPO_TREE_ARITY; ++c)
      if (tr.down[k][g][c] >= 0) todo.push_back(tr.down[k][g][c]);
  }
  for (int g = 0; g < n; ++g) EXPECT_EQ(1, seen[g]) << "tree " << k << ": GPU " << g << " reached " << seen[g];
}

}  // namespace

// One node: both trees of a ring are its chain, in ring order.
TEST(Topo, TreesOnOneNodeAreTheRingsChains) {
  Topo t("nvswitch8_h200.xml");
  ASSERT_EQ("", t.err);
  topo_trees_t tr;
  topo_search_trees(t.sys, &t.rings, &tr);
  ASSERT_EQ(2 * t.rings.nrings, tr.ntrees);
  for (int k = 0; k < tr.ntrees; ++k) {
    int root, net;
    expect_tree(t, tr, k, &root, &net);
    const int *ring = t.rings.order[k / 2];
    EXPECT_EQ(ring[0], root);
    for (int i = 1; i < t.n(); ++i) EXPECT_EQ(ring[i - 1], tr.up[k][ring[i]]) << "tree " << k << " position " << i;
  }
}

// Two nodes: a chain in each node, entered where the ring enters it, one link between the nodes, and
// the two trees of a ring rooted in different nodes.
TEST(Topo, TreesOverTwoNodesAreDoubleBinaryTrees) {
  Topo t("twonode_a.xml", "twonode_b.xml");
  ASSERT_EQ("", t.err);
  topo_trees_t tr;
  topo_search_trees(t.sys, &t.rings, &tr);
  ASSERT_EQ(2 * t.rings.nrings, tr.ntrees);
  for (int k = 0; k < tr.ntrees; ++k) {
    int root, net;
    expect_tree(t, tr, k, &root, &net);
    EXPECT_EQ(1, net) << "tree " << k;
    EXPECT_EQ(k % 2, topo_gpu_node(t.sys, root)) << "tree " << k;
    const int *ring = t.rings.order[k / 2];
    for (int i = 0; i < t.n(); ++i) {  // inside a node, each GPU's parent is its predecessor in the ring
      const int g = ring[i], prev = ring[(i + t.n() - 1) % t.n()];
      if (topo_gpu_node(t.sys, g) != topo_gpu_node(t.sys, prev)) continue;
      EXPECT_EQ(prev, tr.up[k][g]) << "tree " << k;
    }
  }
}

// The double binary tree over 1 to 128 nodes (and a few larger counts): each tree reaches every node once from its
// root, a parent lists each child once and has at most two, the two trees have different roots, no node is inside
// both (each node's sends and receives for children are one tree's), and each is ceil(log2(n + 1)) levels deep.
TEST(Topo, DoubleBinaryTreesOverManyNodes) {
  std::vector<int> counts;
  for (int n = 1; n <= 128; ++n) counts.push_back(n);
  for (int n : {255, 256, 1000, 4096}) counts.push_back(n);
  for (int n : counts) {
    std::vector<int> inside(n, 0);
    int roots[2] = {-1, -1};
    for (int t = 0; t < 2; ++t) {
      std::vector<int> up(n), depth(n, -1);
      std::vector<std::array<int, 2>> down(n);
      for (int k = 0; k < n; ++k) {
        topo_dtree(n, k, t, &up[k], down[k].data());
        ASSERT_TRUE(up[k] >= -1 && up[k] < n && up[k] != k) << n << " " << t << " " << k;
        if (up[k] < 0) {
          ASSERT_EQ(-1, roots[t]) << n << " " << t << ": a second root " << k;
          roots[t] = k;
        }
        if (down[k][0] >= 0 || down[k][1] >= 0) ++inside[k];
        EXPECT_FALSE(down[k][0] < 0 && down[k][1] >= 0) << n << " " << t << " " << k;  // the first child first
      }
      ASSERT_GE(roots[t], 0) << n << " " << t;
      for (int k = 0; k < n; ++k)
        if (up[k] >= 0) {
          EXPECT_EQ(1, (down[up[k]][0] == k) + (down[up[k]][1] == k))
              << n << " " << t << ": " << k << " under " << up[k];
        }
      // from the root down: every node once, at its depth
      std::vector<int> todo{roots[t]};
      depth[roots[t]] = 0;
      int seen = 0, deepest = 0;
      while (!todo.empty()) {
        const int k = todo.back();
        todo.pop_back();
        ++seen;
        deepest = std::max(deepest, depth[k]);
        for (int c : down[k])
          if (c >= 0) {
            ASSERT_EQ(-1, depth[c]) << n << " " << t << ": " << c << " reached twice";
            ASSERT_EQ(k, up[c]);
            depth[c] = depth[k] + 1;
            todo.push_back(c);
          }
      }
      EXPECT_EQ(n, seen) << n << " " << t;
      int levels = 0;
      while ((1 << levels) < n + 1) ++levels;  // ceil(log2(n + 1))
      EXPECT_EQ(levels, deepest + 1) << n << " " << t;
    }
    if (n > 1) {
      EXPECT_NE(roots[0], roots[1]) << n;
    }
    for (int k = 0; k < n; ++k) EXPECT_LE(inside[k], 1) << n << ": node " << k << " inside both trees";
  }
}

// The trees of one ring over any members (a communicator's ranks): random rings over 2 to 128 members in 1 to 16
// nodes, each node's members in one run of the ring or scattered over it, node ids any members' numbers. Each tree
// reaches every member once from one root; a parent lists each child once, at most TOPO_TREE_ARITY, packed first;
// inside a node each member's parent is the member before it in ring order from where the ring enters the node (from
// order[0] on one node), and the heads (each node's first member there) hang in topo_dtree's tree over the nodes in
// the order of their ids.
TEST(Topo, RingTreesOverAnyMembers) {
  std::mt19937 rng(20261204);
  for (int iter = 0; iter < 400; ++iter) {
    const int n = 2 + (int)(rng() % 127), nnodes = 1 + (int)(rng() % std::min(n, 16));
    std::vector<int> order(n), node(n), ids(nnodes);
    for (int m = 0; m < n; ++m) order[m] = m;
    std::shuffle(order.begin(), order.end(), rng);
    for (int k = 0; k < nnodes; ++k) ids[k] = (int)(rng() % n);  // ids need not be dense, or distinct
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    const int nn = (int)ids.size();
    const bool runs = rng() % 2;  // each node's members one run of the ring
    for (int k = 0; k < n; ++k) node[order[k]] = ids[runs ? k * nn / n : (k < nn ? k : (int)(rng() % nn))];
    const int start = (int)(rng() % n);  // the ring may start inside a run
    std::rotate(order.begin(), order.begin() + start, order.end());
    int from = 0;  // where the ring enters a node
    for (int k = 0; k < n && nn > 1; ++k)
      if (node[order[k]] != node[order[(k + n - 1) % n]]) {
        from = k;
        break;
      }
    std::vector<int> head(n, -1), before(n, -1);  // by member: its predecessor in its node, from `from`
    std::vector<int> last_of(n, -1);              // by node id
    for (int k = 0; k < n; ++k) {
      const int m = order[(from + k) % n], id = node[m];
      if (last_of[id] < 0) head[id] = m;
      before[m] = last_of[id];
      last_of[id] = m;
    }
    std::vector<int> scratch(3 * n), up(n), down(n * TOPO_TREE_ARITY);
    for (int t = 0; t < 2; ++t) {
      topo_ring_tree(n, order.data(), node.data(), t, scratch.data(), up.data(), down.data());
      const std::string what = "n " + std::to_string(n) + " nodes " + std::to_string(nn) + " tree " +
                               std::to_string(t) + (runs ? " runs" : " scattered");
      for (int m = 0; m < n; ++m) {
        const int id = node[m];
        if (before[m] >= 0) {
          EXPECT_EQ(before[m], up[m]) << what << ": member " << m;
          continue;
        }
        const int place = (int)(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
        int parent, child[2];
        topo_dtree(nn, place, t, &parent, child);
        EXPECT_EQ(parent < 0 ? -1 : head[ids[parent]], up[m]) << what << ": head " << m;
        std::set<int> kids;
        for (int c = 0; c < TOPO_TREE_ARITY; ++c)
          if (down[m * TOPO_TREE_ARITY + c] >= 0) kids.insert(down[m * TOPO_TREE_ARITY + c]);
        for (int c = 0; c < 2; ++c) {
          if (child[c] >= 0) {
            EXPECT_EQ(1u, kids.count(head[ids[child[c]]])) << what << ": head " << m;
          }
        }
      }
      int root = -1, seen = 0;
      for (int m = 0; m < n; ++m) {
        if (up[m] < 0) {
          ASSERT_EQ(-1, root) << what << ": a second root " << m;
          root = m;
        }
        bool gap = false;
        for (int c = 0; c < TOPO_TREE_ARITY; ++c) {
          const int k = down[m * TOPO_TREE_ARITY + c];
          if (k < 0) {
            gap = true;
            continue;
          }
          EXPECT_FALSE(gap) << what << ": member " << m << " has a child after none";
          EXPECT_EQ(m, up[k]) << what << ": child " << k << " of " << m;
        }
      }
      ASSERT_GE(root, 0) << what;
      std::vector<int> reached(n, 0), todo{root};
      while (!todo.empty() && seen <= n) {
        const int m = todo.back();
        todo.pop_back();
        ++seen;
        ++reached[m];
        for (int c = 0; c < TOPO_TREE_ARITY; ++c)
          if (down[m * TOPO_TREE_ARITY + c] >= 0) todo.push_back(down[m * TOPO_TREE_ARITY + c]);
      }
      for (int m = 0; m < n; ++m) EXPECT_EQ(1, reached[m]) << what << ": member " << m;
    }
  }
}
