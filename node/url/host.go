package url

import "net"

// LocalIP is the address a node on this machine puts in its URLs when none
// is configured: the first non-loopback IPv4 address, as Java's
// NetUtils.getLocalHost picks one, else 127.0.0.1.
func LocalIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
