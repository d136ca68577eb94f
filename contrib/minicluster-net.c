/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The links of the mini-cluster (contrib/minicluster.sh), made through rtnetlink so that no iproute2 is
 * needed (the GPU machines have none):
 *   minicluster-net bridge NAME ADDR/PREFIX           a bridge in this network namespace, with an address, up
 *   minicluster-net veth NAME BRIDGE NETNS-FILE ADDR/PREFIX
 *                                                     a veth pair: NAME on BRIDGE here, up; its peer "eth0"
 *                                                     in the namespace NETNS-FILE, with the address, up, and
 *                                                     that namespace's loopback up
 *   minicluster-net del NAME                          delete a link of this namespace (a veth takes its peer)
 * No route is added beyond the addresses' own subnets: no default route, nothing outside the bridge.
 * Exit status 0, or 1 with a message.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
  struct nlmsghdr h;
  char buf[1024];
} msg_t;

static int fail(const char *what) {
  fprintf(stderr, "minicluster-net: %s: %s\n", what, strerror(errno));
  return 1;
}

static struct rtattr *attr_at(msg_t *m) { return (struct rtattr *)((char *)m + NLMSG_ALIGN(m->h.nlmsg_len)); }

static void add_attr(msg_t *m, unsigned short type, const void *data, size_t len) {
  struct rtattr *a = attr_at(m);
  a->rta_type = type;
  a->rta_len = (unsigned short)RTA_LENGTH(len);
  if (len > 0) memcpy(RTA_DATA(a), data, len);
  m->h.nlmsg_len = NLMSG_ALIGN(m->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* Opens a nested attribute; end_nest closes it. */
static struct rtattr *begin_nest(msg_t *m, unsigned short type) {
  struct rtattr *a = attr_at(m);
  add_attr(m, type, NULL, 0);
  return a;
}
static void end_nest(msg_t *m, struct rtattr *a) { a->rta_len = (unsigned short)((char *)attr_at(m) - (char *)a); }

/* Sends m and waits for the kernel's acknowledgement; 0, or -1 with errno set. */
static int talk(msg_t *m) {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return -1;
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  m->h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
  m->h.nlmsg_seq = 1;
  if (sendto(fd, m, m->h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
    close(fd);
    return -1;
  }
  char reply[4096];
  const ssize_t n = recv(fd, reply, sizeof(reply), 0);
  close(fd);
  if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
    errno = EPROTO;
    return -1;
  }
  const struct nlmsghdr *h = (const struct nlmsghdr *)reply;
  if (h->nlmsg_type != NLMSG_ERROR) {
    errno = EPROTO;
    return -1;
  }
  const struct nlmsgerr *e = NLMSG_DATA(h);
  if (e->error != 0) {
    errno = -e->error;
    return -1;
  }
  return 0;
}

static void link_msg(msg_t *m, unsigned short type, unsigned short flags, int index) {
  memset(m, 0, sizeof(*m));
  m->h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
  m->h.nlmsg_type = type;
  m->h.nlmsg_flags = flags;
  struct ifinfomsg *i = NLMSG_DATA(&m->h);
  i->ifi_family = AF_UNSPEC;
  i->ifi_index = index;
}

/* Sets link `name` up, optionally attached to bridge `master`. */
static int set_up(const char *name, const char *master) {
  const int index = (int)if_nametoindex(name);
  if (index == 0) return -1;
  msg_t m;
  link_msg(&m, RTM_NEWLINK, 0, index);
  struct ifinfomsg *i = NLMSG_DATA(&m.h);
  i->ifi_flags = IFF_UP;
  i->ifi_change = IFF_UP;
  if (master != NULL) {
    const unsigned int bridge = if_nametoindex(master);
    if (bridge == 0) return -1;
    add_attr(&m, IFLA_MASTER, &bridge, sizeof(bridge));
  }
  return talk(&m);
}

/* Gives link `name` the IPv4 address "A.B.C.D/P". */
static int add_address(const char *name, const char *cidr) {
  char ip[32];
  snprintf(ip, sizeof(ip), "%s", cidr);
  char *slash = strchr(ip, '/');
  if (slash == NULL) {
    errno = EINVAL;
    return -1;
  }
  *slash = '\0';
  const int prefix = atoi(slash + 1);
  struct in_addr a;
  if (inet_pton(AF_INET, ip, &a) != 1 || prefix < 8 || prefix > 30) {
    errno = EINVAL;
    return -1;
  }
  const int index = (int)if_nametoindex(name);
  if (index == 0) return -1;
  msg_t m;
  memset(&m, 0, sizeof(m));
  m.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
  m.h.nlmsg_type = RTM_NEWADDR;
  m.h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
  struct ifaddrmsg *ia = NLMSG_DATA(&m.h);
  ia->ifa_family = AF_INET;
  ia->ifa_prefixlen = (unsigned char)prefix;
  ia->ifa_index = (unsigned int)index;
  add_attr(&m, IFA_LOCAL, &a, sizeof(a));
  add_attr(&m, IFA_ADDRESS, &a, sizeof(a));
  return talk(&m);
}

static int bridge(const char *name, const char *cidr) {
  msg_t m;
  link_msg(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
  add_attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
  struct rtattr *info = begin_nest(&m, IFLA_LINKINFO);
  add_attr(&m, IFLA_INFO_KIND, "bridge", 7);
  end_nest(&m, info);
  if (talk(&m) != 0) return fail("create the bridge");
  if (add_address(name, cidr) != 0) return fail("address the bridge");
  if (set_up(name, NULL) != 0) return fail("set the bridge up");
  return 0;
}

static int veth(const char *name, const char *master, const char *netns, const char *cidr) {
  const int ns = open(netns, O_RDONLY | O_CLOEXEC);
  if (ns < 0) return fail(netns);
  msg_t m;
  link_msg(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
  add_attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
  struct rtattr *info = begin_nest(&m, IFLA_LINKINFO);
  add_attr(&m, IFLA_INFO_KIND, "veth", 5);
  struct rtattr *data = begin_nest(&m, IFLA_INFO_DATA);
  struct rtattr *peer = begin_nest(&m, VETH_INFO_PEER);
  struct ifinfomsg pi = {.ifi_family = AF_UNSPEC};
  memcpy(RTA_DATA(peer), &pi, sizeof(pi));
  m.h.nlmsg_len += NLMSG_ALIGN(sizeof(pi));
  add_attr(&m, IFLA_IFNAME, "eth0", 5);
  const unsigned int fd = (unsigned int)ns;
  add_attr(&m, IFLA_NET_NS_FD, &fd, sizeof(fd));
  end_nest(&m, peer);
  end_nest(&m, data);
  end_nest(&m, info);
  if (talk(&m) != 0) return fail("create the veth pair");
  if (set_up(name, master) != 0) return fail("attach the veth to the bridge");
  /* the host's side, from inside its namespace */
  if (setns(ns, CLONE_NEWNET) != 0) return fail("enter the host's network namespace");
  close(ns);
  if (add_address("eth0", cidr) != 0) return fail("address the host's eth0");
  if (set_up("eth0", NULL) != 0) return fail("set the host's eth0 up");
  if (set_up("lo", NULL) != 0) return fail("set the host's loopback up");
  return 0;
}

static int del(const char *name) {
  const int index = (int)if_nametoindex(name);
  if (index == 0) return fail(name);
  msg_t m;
  link_msg(&m, RTM_DELLINK, 0, index);
  return talk(&m) == 0 ? 0 : fail("delete the link");
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "bridge") == 0) return bridge(argv[2], argv[3]);
  if (argc == 6 && strcmp(argv[1], "veth") == 0) return veth(argv[2], argv[3], argv[4], argv[5]);
  if (argc == 3 && strcmp(argv[1], "del") == 0) return del(argv[2]);
  fprintf(stderr,
          "usage: minicluster-net bridge NAME ADDR/PREFIX | veth NAME BRIDGE NETNS-FILE ADDR/PREFIX | del NAME\n");
  return 2;
}
