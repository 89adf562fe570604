// Package dgrun holds what dgprovider and dgconsumer share as test peers:
// keeping stdout for machine-readable lines while dubbo-go logs to stderr,
// and turning a Dubbo registry URL into dubbo-go registry options.
package dgrun

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"dubbo.apache.org/dubbo-go/v3/logger"
	"dubbo.apache.org/dubbo-go/v3/registry"
)

// TakeStdout moves fd 1 to a private descriptor and points fd 1 at stderr,
// so every dubbo-go logger (which writes to os.Stdout, some created during
// package init) ends up on stderr. The returned file is the real stdout,
// for READY and JSON lines only. Call it first thing in main.
func TakeStdout() *os.File {
	fd, err := syscall.Dup(1)
	if err != nil {
		return os.Stdout
	}
	if err := syscall.Dup3(2, 1, 0); err != nil {
		_ = syscall.Close(fd)
		return os.Stdout
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "stdout")
}

// LoggerOptions keeps dubbo-go quiet unless asked: level is one of debug,
// info, warn, error.
func LoggerOptions(level string) []logger.Option {
	return []logger.Option{logger.WithZap(), logger.WithLevel(level)}
}

// Protocols, the values of dgprovider's -protocol flag.
const (
	ProtocolDubbo  = "dubbo"
	ProtocolTriple = "tri"
)

// Registration modes, the values of the -register-mode flag.
const (
	// ModeInterface writes the classic /dubbo/<interface>/providers and
	// /consumers nodes (registry.WithRegisterInterface).
	ModeInterface = "interface"
	// ModeInstance is dubbo-go 3.3's own default: application level only,
	// an instance node under /services/<application>.
	ModeInstance = "instance"
	// ModeAll is both (registry.WithRegisterServiceAndInterface).
	ModeAll = "all"
)

// RegistryOptions turns "zookeeper://host:port[,host:port]" into dubbo-go
// registry options with the registration mode (ModeInterface, ModeInstance
// or ModeAll; "" = ModeInterface). sessionTimeout, when not zero, is the
// ZooKeeper session timeout dubbo-go asks for (its registry client reads it
// from the "config-center.timeout" parameter, default 5s).
func RegistryOptions(address, mode string, sessionTimeout time.Duration) ([]registry.Option, error) {
	scheme, hosts, ok := strings.Cut(address, "://")
	if !ok || scheme != "zookeeper" {
		return nil, fmt.Errorf("registry %q: want zookeeper://host:port", address)
	}
	hosts, _, _ = strings.Cut(hosts, "?")
	hosts = strings.TrimSuffix(hosts, "/")
	for _, h := range strings.Split(hosts, ",") {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return nil, fmt.Errorf("registry %q: %v", address, err)
		}
	}
	opts := []registry.Option{
		registry.WithZookeeper(),
		registry.WithAddress(hosts),
	}
	switch mode {
	case "", ModeInterface:
		opts = append(opts, registry.WithRegisterInterface())
	case ModeInstance:
		// dubbo-go's default: no option.
	case ModeAll:
		opts = append(opts, registry.WithRegisterServiceAndInterface())
	default:
		return nil, fmt.Errorf("register mode %q: want %s, %s or %s", mode, ModeInterface, ModeInstance, ModeAll)
	}
	if sessionTimeout > 0 {
		opts = append(opts, registry.WithParams(map[string]string{
			"config-center.timeout": sessionTimeout.String(),
		}))
	}
	return opts, nil
}
