#!/bin/sh
# zerodrop's resilient ECMP (harness/router): FRR 8.4's zebra installs a BGP
# multipath route with inline nexthops, which the kernel balances by
# hash-threshold (RFC 2992): when a nexthop leaves, part of every other
# nexthop's hash range moves too. This loop mirrors each of FRR's routes in
# the pool into a resilient nexthop group (Linux
# Documentation/networking/nexthop-group-resilient.rst) in its own table,
# which traffic arriving on the cluster's network looks up first: a node
# that leaves gives up only its own buckets, and a node that comes gets
# buckets only once they have been idle for the idle timer.
#
# Usage: resilient.sh POOL TABLE DEV BUCKETS IDLE_SECONDS UNBALANCED_SECONDS
# Logs every change it makes, with the time, on stdout.
set -eu
pool=$1 table=$2 dev=$3 buckets=$4 idle=$5 unbalanced=$6

ip rule del pref 100 2>/dev/null || true
ip rule add pref 100 iif "$dev" lookup "$table"
# A throw route sends a lookup that finds nothing here on to the main
# table, as if the mirror were not there (and keeps the table in being).
ip route replace throw "$pool" table "$table"

# One pass: FRR's routes (main table), the mirror's (its table), and the
# kernel's nexthop objects, in that order, separated by lines "--"; awk
# prints the ip(8) batch that makes the mirror match. Nexthop ids are the
# addresses as 32-bit numbers: a gateway's is its own, a route's group is
# its destination's (pool and cluster network never overlap).
#
# Every gateway is in its groups twice, as two nexthop objects (its own id
# and a twin, the id with its top bit flipped): the kernel selects among a
# route's nexthops only when there are two or more (fib_select_path), so a
# group of one would never mark its buckets busy, and when a second node
# came every bucket would count as idle and half the established flows
# would move (measured: 6 of 16 kept-alive connections reset when a node
# joined a route of one). Twins keep even a single node's buckets tracked.
sync_once() {
	cmds=$({
		ip route show root "$pool" proto bgp
		echo --
		ip route show root "$pool" table "$table"
		echo --
		ip nexthop show
	} | awk -v table="$table" -v dev="$dev" -v buckets="$buckets" -v idle="$idle" -v unbal="$unbalanced" '
	function num(a,   p) { split(a, p, "."); return ((p[1] * 256 + p[2]) * 256 + p[3]) * 256 + p[4] }
	function id(a) { return sprintf("%.0f", num(a)) }
	function twin(a,   n) { n = num(a); return sprintf("%.0f", n >= 2147483648 ? n - 2147483648 : n + 2147483648) }
	$0 == "--" { part++; next }
	part == 0 && /^[0-9]/ { dst = $1; want[dst] = ""; if ($2 == "via") add(dst, $3); next }
	part == 0 && $1 == "nexthop" && $2 == "via" { add(dst, $3); next }
	part == 1 && /^[0-9]/ { have[$1] = 1; next }
	part == 2 && $1 == "id" { nh[$2] = 1; if ($3 == "group") grp[$2] = $4; next }
	function add(d, gw) { gws[gw] = 1; want[d] = want[d] (want[d] == "" ? "" : " ") id(gw) " " twin(gw) }
	function sorted(s,   n, a, i, j, t, out) {
		n = split(s, a, /[ \/]/)
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		for (i = 1; i <= n; i++) out = out (i > 1 ? "/" : "") a[i]
		return out
	}
	END {
		for (g in gws) {
			if (!(id(g) in nh)) print "nexthop add id " id(g) " via " g " dev " dev
			if (!(twin(g) in nh)) print "nexthop add id " twin(g) " via " g " dev " dev
		}
		for (d in want) {
			if (want[d] == "") continue
			gid = id(d); members = sorted(want[d])
			if (!(gid in grp)) {
				print "nexthop add id " gid " group " members " type resilient buckets " buckets " idle_timer " idle " unbalanced_timer " unbal
			} else if (sorted(grp[gid]) != members) {
				print "nexthop replace id " gid " group " members " type resilient"
			}
			if (!(d in have)) print "route replace " d " nhid " gid " table " table
		}
		for (d in have) if (!(d in want) || want[d] == "") {
			print "route del " d " table " table
			print "nexthop del id " id(d)
		}
	}')
	[ -n "$cmds" ] || return 0
	printf '%s\n' "$cmds" | while IFS= read -r c; do echo "$(date -u +%H:%M:%S.%N) ip $c"; done
	printf '%s\n' "$cmds" | ip -force -batch -
}

sync_once
echo "$(date -u +%H:%M:%S.%N) ready: pool $pool mirrored into table $table (resilient, $buckets buckets, idle $idle s, unbalanced $unbalanced s)"
# Every route change triggers a pass; a pass that changes nothing is cheap
# and the mirror's own changes end in one.
ip monitor route | while IFS= read -r _; do sync_once || echo "$(date -u +%H:%M:%S.%N) sync failed" >&2; done
