package cluster

import (
	"fmt"
	"net/netip"
)

// lbRange carves count addresses from the top of an IPv4 subnet for
// LoadBalancer Services, leaving the broadcast address and one spare below
// it. Docker hands container addresses out from the bottom, so the top of the
// kind network is free for MetalLB.
func lbRange(subnet netip.Prefix, count int) (first, last netip.Addr, err error) {
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
	lo := top - uint64(count) + 1
	return u32addr(lo), u32addr(top), nil
}

func u32addr(v uint64) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
