package router

import (
	"bytes"
	"fmt"
	"net/netip"
	"text/template"
	"time"
)

// Daemons turns on the FRR daemons the router runs, in Debian's
// /etc/frr/daemons (zebra and watchfrr always run): bgpd for the
// speakers' sessions and bfdd for BFD where a peer asks for it.
const Daemons = `sed -i -e 's/^bgpd=no/bgpd=yes/' -e 's/^bfdd=no/bfdd=yes/' /etc/frr/daemons`

// configTmpl is the router's frr.conf. Every speaker connects from the
// cluster's network (bgp listen range: no neighbor per node, so nodes
// that join are peers at once) as AS PeerASN; eBGP needs no policy to
// accept their routes here (no bgp ebgp-requires-policy, an FRR 7.4+
// default otherwise), and maximum-paths lets zebra install every
// speaker's equal route as one multipath route. Kernel nexthop objects are
// off so `ip route` shows each route's nexthops inline (ParseRoutes).
var configTmpl = template.Must(template.New("frr.conf").Parse(`! zerodrop's upstream router (harness/router), rendered by Config
frr defaults traditional
hostname {{.Name}}
log stdout informational
ip forwarding
no zebra nexthop kernel enable
!
router bgp {{.ASN}}
 bgp router-id {{.IP}}
 no bgp ebgp-requires-policy
 no bgp network import-check
 neighbor SPEAKERS peer-group
 neighbor SPEAKERS remote-as {{.PeerASN}}
{{- if .Hold}}
 neighbor SPEAKERS timers {{.Keepalive}} {{.Hold}}
{{- end}}
 bgp listen range {{.Subnet}} peer-group SPEAKERS
 !
 address-family ipv4 unicast
  maximum-paths {{.MaxPaths}}
 exit-address-family
exit
!
`))

// Config renders the router's frr.conf for the speakers of subnet.
func Config(r *Router, subnet netip.Prefix) (string, error) {
	if !subnet.IsValid() || !r.IP.IsValid() || r.ASN == 0 || r.PeerASN == 0 {
		return "", fmt.Errorf("router config: subnet, address and both AS numbers are required")
	}
	var b bytes.Buffer
	// Keepalives every third of the hold time, as RFC 4271 suggests.
	hold := int(r.HoldTime / time.Second)
	if r.HoldTime > 0 && (hold < 3 || hold > 65535) {
		return "", fmt.Errorf("router config: hold time %s: want 3s to 65535s (RFC 4271)", r.HoldTime)
	}
	err := configTmpl.Execute(&b, map[string]any{"Name": r.Container, "ASN": r.ASN, "PeerASN": r.PeerASN,
		"IP": r.IP, "Subnet": subnet.Masked(), "MaxPaths": 16, "Hold": hold, "Keepalive": max(hold/3, 1)})
	return b.String(), err
}
