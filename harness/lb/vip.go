package lb

import (
	"fmt"
	"hash/fnv"
	"net/netip"
)

// KindVIPRange is where the cloud LB of a kind cluster takes addresses: 32
// addresses carved from the top of the kind subnet in the same blocks as
// harness/cluster's MetalLB pools. MetalLB of the default cluster
// ("zerodrop") has block 0 (the top 32, less broadcast and one spare) and the
// cloud LB of that cluster block 1 just below; MetalLB of other cluster names
// uses blocks 2-17, so their cloud LB takes one of blocks 18-33 by name. Both
// can run on one network without overlap.
func KindVIPRange(subnet netip.Prefix, cluster string) (first, last netip.Addr, err error) {
	if !subnet.Addr().Is4() || subnet.Bits() > 20 {
		return first, last, fmt.Errorf("kind subnet %s: want IPv4 /20 or larger", subnet)
	}
	block := uint32(1)
	if cluster != "" && cluster != "zerodrop" {
		h := fnv.New32a()
		h.Write([]byte(cluster))
		block = 18 + h.Sum32()%16
	}
	subnet = subnet.Masked()
	b := subnet.Addr().As4()
	base := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	size := uint32(1) << (32 - subnet.Bits())
	top := base + size - 3 - 32*block
	lo := top - 31
	u := func(v uint32) netip.Addr {
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	return u(lo), u(top), nil
}
