/*
 * netbytes.h - the network bytes of a task's processes, with no privileges
 * and nothing injected into the task.
 *
 * Two methods, chosen per process by its network namespace
 * (/proc/PID/ns/net):
 *
 *   sock_diag  a process in the monitor's own namespace: the TCP sockets
 *              (IPv4 and IPv6) its descriptors hold, read from the
 *              kernel's socket diagnostics (NETLINK_SOCK_DIAG, struct
 *              tcp_info): bytes acknowledged by the peer (sent) and bytes
 *              received in order, TCP payload as the sequence numbers count
 *              it (a connection's SYN and FIN count one byte each). A
 *              socket is counted once however many processes hold it
 *              (inherited across fork and exec), also when the tree was
 *              read before a new process whose parent then closed its copy
 *              (the next sample, which has that process, counts the socket
 *              whole). A socket that closes keeps
 *              its last figures: its final ones when the kernel's
 *              notice of its destruction (a sock_diag multicast group) is
 *              read, else those of the last sample that saw it.
 *              Not counted: UDP, Unix sockets, RDMA and other kernel-bypass
 *              traffic, and a connection opened and closed between two
 *              samples. A connection between two processes of the task
 *              counts on both ends.
 *   netns      a process in a network namespace of its own (a container,
 *              unshare -n): the namespace's interfaces' counters
 *              (/proc/PID/net/dev, every interface, loopback included),
 *              so every protocol, headers included, over the namespace's
 *              whole life. A namespace that goes keeps its last figures.
 *
 * Totals are cumulative and never decrease. The methods a sample used are
 * returned as a mask, named by pano_net_method_name ("none" when no
 * process could be measured).
 */
#ifndef PANO_NETBYTES_H
#define PANO_NETBYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum { PANO_NET_SOCK_DIAG = 1, PANO_NET_NETNS = 2 };

typedef struct pano_netbytes pano_netbytes;

pano_netbytes *pano_netbytes_new(void);
void pano_netbytes_free(pano_netbytes *n);

/* The network namespace of pid (0: this process) as the inode of
 * /proc/PID/ns/net, or 0 when it cannot be read. */
uint64_t pano_netns_of(pid_t pid);

/* Read the bytes of these live processes (the task's tree), each in the
 * namespace given (pano_netns_of; 0: not counted). *sent and *received
 * are the cumulative totals since the first sample; returns the mask of
 * the methods used so far. A sample costs a walk of the kernel's table of
 * TCP connections (about 150 us on a machine of 24 GiB, whatever few
 * sockets it holds), plus one read of /proc/PID/fd per process when a
 * socket not yet placed appears, or a process new to the tree while a
 * socket not the tree's is open. */
unsigned pano_netbytes_sample(pano_netbytes *n, const pid_t *pids, const uint64_t *netns,
                              size_t npids, uint64_t *sent, uint64_t *received);

/* "sock_diag", "netns", "sock_diag+netns" or "none". */
const char *pano_net_method_name(unsigned methods);

/* The received and transmitted bytes of every interface of a
 * /proc/PID/net/dev text, summed (false when it has no interface line). */
bool pano_net_dev_parse(const char *buf, size_t len, uint64_t *rx, uint64_t *tx);

#endif
