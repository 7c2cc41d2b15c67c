package cloudlb

import (
	"fmt"
	"net/netip"
)

// VIPPool hands out LoadBalancer addresses from an inclusive range.
type VIPPool struct {
	first, last netip.Addr
	byKey       map[string]netip.Addr
	byAddr      map[netip.Addr]string
}

// NewVIPPool returns a pool over first..last (IPv4, first <= last).
func NewVIPPool(first, last netip.Addr) (*VIPPool, error) {
	if !first.Is4() || !last.Is4() || last.Less(first) {
		return nil, fmt.Errorf("VIP range %s-%s: want two IPv4 addresses, first <= last", first, last)
	}
	return &VIPPool{first: first, last: last, byKey: map[string]netip.Addr{}, byAddr: map[netip.Addr]string{}}, nil
}

// ParseVIPRange reads "first-last".
func ParseVIPRange(s string) (*VIPPool, error) {
	var a, b string
	for i := 0; i < len(s); i++ {
		if s[i] == '-' {
			a, b = s[:i], s[i+1:]
			break
		}
	}
	first, err1 := netip.ParseAddr(a)
	last, err2 := netip.ParseAddr(b)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("VIP range %q: want FIRST-LAST, e.g. 172.18.255.160-172.18.255.191", s)
	}
	return NewVIPPool(first, last)
}

// Contains reports whether a is in the range.
func (p *VIPPool) Contains(a netip.Addr) bool {
	return a.Is4() && !a.Less(p.first) && !p.last.Less(a)
}

// Allocate returns key's address: the one it has, else prefer (when free and
// in range: an address the Service already shows in its status), else the
// lowest free one.
func (p *VIPPool) Allocate(key string, prefer netip.Addr) (netip.Addr, error) {
	if a, ok := p.byKey[key]; ok {
		return a, nil
	}
	if prefer.IsValid() && p.Contains(prefer) {
		if _, taken := p.byAddr[prefer]; !taken {
			p.take(key, prefer)
			return prefer, nil
		}
	}
	for a := p.first; ; a = a.Next() {
		if _, taken := p.byAddr[a]; !taken {
			p.take(key, a)
			return a, nil
		}
		if a == p.last {
			break
		}
	}
	return netip.Addr{}, fmt.Errorf("VIP range %s-%s is exhausted (%d Services hold addresses); widen --vip-range", p.first, p.last, len(p.byKey))
}

func (p *VIPPool) take(key string, a netip.Addr) {
	p.byKey[key] = a
	p.byAddr[a] = key
}

// Release frees key's address.
func (p *VIPPool) Release(key string) {
	if a, ok := p.byKey[key]; ok {
		delete(p.byAddr, a)
		delete(p.byKey, key)
	}
}
