package cluster

import (
	"fmt"
	"hash/fnv"
	"net/netip"
)

// lbBlock picks which block of addresses a cluster's MetalLB pool takes, so
// clusters sharing the kind network do not announce the same addresses: the
// default cluster takes the top block (block 1, just below it, is the cloud
// LB's), any other name one of 16 blocks further down, chosen by its name.
func lbBlock(cluster string) int {
	if cluster == "zerodrop" {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(cluster))
	return 2 + int(h.Sum32()%16)
}

// lbRange carves count addresses from the top of an IPv4 subnet for
// LoadBalancer Services, leaving the broadcast address and one spare below
// it. Docker hands container addresses out from the bottom, so the top of the
// kind network is free for MetalLB.
//
// block > 0 moves the range down by block*count addresses; a subnet too small
// for that falls back to block 0.
func lbRange(subnet netip.Prefix, count, block int) (first, last netip.Addr, err error) {
	if !subnet.Addr().Is4() {
		return first, last, fmt.Errorf("subnet %s is not IPv4", subnet)
	}
	subnet = subnet.Masked()
	hostBits := 32 - subnet.Bits()
	if hostBits < 4 {
		return first, last, fmt.Errorf("subnet %s is too small to carve LoadBalancer addresses from", subnet)
	}
	size := uint64(1) << hostBits
	if count < 1 || uint64(count) > size/4 {
		return first, last, fmt.Errorf("cannot carve %d LoadBalancer addresses from %s (at most a quarter of it: %d)", count, subnet, size/4)
	}
	base := subnet.Addr().As4()
	b := uint64(base[0])<<24 | uint64(base[1])<<16 | uint64(base[2])<<8 | uint64(base[3])
	top := b + size - 3 // below broadcast and one spare
	if shift := uint64(block) * uint64(count); block > 0 && shift+uint64(count) <= size/2 {
		top -= shift
	}
	lo := top - uint64(count) + 1
	return u32addr(lo), u32addr(top), nil
}

// hostRange is an IPv4 prefix's addresses without its first (network) and
// last (broadcast) ones.
func hostRange(p netip.Prefix) (first, last netip.Addr) {
	p = p.Masked()
	b := p.Addr().As4()
	base := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	return u32addr(base + 1), u32addr(base + 1<<(32-p.Bits()) - 2)
}

func u32addr(v uint64) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
