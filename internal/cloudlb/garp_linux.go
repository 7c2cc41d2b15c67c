package cloudlb

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// GratuitousARP announces that ip now lives at interface ifname's MAC (a
// broadcast ARP request for ip from ip). Hosts that cached another MAC for the
// address (the previous LB container's) update their entry at once instead of
// sending into the void until their cache entry fails.
func GratuitousARP(ifname string, ip netip.Addr) error {
	if !ip.Is4() {
		return fmt.Errorf("gratuitous ARP for %s: IPv4 only", ip)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("gratuitous ARP for %s: %w", ip, err)
	}
	if len(ifi.HardwareAddr) != 6 {
		return fmt.Errorf("gratuitous ARP for %s: interface %s has no Ethernet address", ip, ifname)
	}
	const ethPARP = 0x0806
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(ethPARP)))
	if err != nil {
		return fmt.Errorf("gratuitous ARP for %s: packet socket: %w", ip, err)
	}
	defer unix.Close(fd)
	bcast := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	ip4 := ip.As4()
	frame := make([]byte, 0, 42)
	frame = append(frame, bcast...)
	frame = append(frame, ifi.HardwareAddr...)
	frame = binary.BigEndian.AppendUint16(frame, ethPARP)
	frame = binary.BigEndian.AppendUint16(frame, 1)      // Ethernet
	frame = binary.BigEndian.AppendUint16(frame, 0x0800) // IPv4
	frame = append(frame, 6, 4)
	frame = binary.BigEndian.AppendUint16(frame, 1) // request
	frame = append(frame, ifi.HardwareAddr...)
	frame = append(frame, ip4[:]...)
	frame = append(frame, 0, 0, 0, 0, 0, 0)
	frame = append(frame, ip4[:]...)
	sa := &unix.SockaddrLinklayer{Protocol: htons(ethPARP), Ifindex: ifi.Index, Halen: 6}
	copy(sa.Addr[:], bcast)
	if err := unix.Sendto(fd, frame, 0, sa); err != nil {
		return fmt.Errorf("gratuitous ARP for %s on %s: %w", ip, ifname, err)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
