package embeddedzk_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
)

// TestProcessFourLetterWhitelist runs `dubbo run --role=registry` as a user
// would: by default `dump` must not reveal an ephemeral provider node whose
// name carries a token and whose ACL denies reading it, and neither may the
// other words that show sessions, paths or the environment, or reset stats.
func TestProcessFourLetterWhitelist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the dubbo binary")
	}
	bin := buildDubbo(t)
	const secret = "token%3Ds3cret-4711"

	t.Run("default", func(t *testing.T) {
		reg := newRegistryProcess(t, bin)
		reg.start(t)
		createProtected(t, reg, secret)
		for _, w := range []string{"dump", "envi", "conf", "cons", "wchc", "wchp", "stat", "mntr", "crst", "srst"} {
			out, err := apachezk.FourLetter(reg.addr, w, 5*time.Second)
			if want := w + " is not executed because it is not in the whitelist.\n"; err != nil || out != want {
				t.Errorf("%s = %q, %v; want %q", w, out, err, want)
			}
		}
		if out, err := apachezk.FourLetter(reg.addr, "ruok", 5*time.Second); err != nil || out != "imok" {
			t.Errorf("ruok = %q, %v; want imok", out, err)
		}
		if out, err := apachezk.FourLetter(reg.addr, "srvr", 5*time.Second); err != nil || !strings.Contains(out, "Mode: standalone") {
			t.Errorf("srvr = %q, %v; want the server's stats", out, err)
		}
	})

	t.Run("whitelist_all", func(t *testing.T) {
		reg := newRegistryProcess(t, bin)
		reg.extra = []string{"--set", "registry.server.4lw-whitelist=*"}
		reg.start(t)
		createProtected(t, reg, secret)
		// The operator asked for every word: dump answers, as Apache's does.
		if out, err := apachezk.FourLetter(reg.addr, "dump", 5*time.Second); err != nil || !strings.Contains(out, secret) {
			t.Errorf("dump with 4lw-whitelist=* = %q, %v; want the ephemeral paths", out, err)
		}
	})
}

// createProtected registers an ephemeral node like a provider with a token,
// readable by its owner only, and checks a stranger cannot read it.
func createProtected(t *testing.T, reg *registryProcess, secret string) {
	t.Helper()
	owner := connect(t, reg.target())
	if err := owner.AddAuth("digest", []byte("dubbo:pw")); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, owner, "/dubbo", nil, zk.FlagPersistent)
	p := "/dubbo/dubbo%3A%2F%2F127.0.0.1%3A20880%2Fx.Y%3F" + secret
	if _, err := owner.Create(p, nil, zk.FlagEphemeral, zk.DigestACL(zk.PermAll, "dubbo", "pw")); err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
	if _, _, err := connect(t, reg.target()).Get(p); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("stranger get = %v, want ErrNoAuth", err)
	}
}

// TestProcessSuperDigest is the lock-out: a client without auth runs
// setAcl /dubbo world:anyone:r, after which nobody could change /dubbo;
// with registry.server.super-digest set, the super user undoes it.
func TestProcessSuperDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the dubbo binary")
	}
	reg := newRegistryProcess(t, buildDubbo(t))
	reg.extra = []string{"--set", "registry.server.super-digest=" + confSuperDigest}
	reg.start(t)
	c := connect(t, reg.target())
	mustCreate(t, c, "/dubbo", nil, zk.FlagPersistent)
	if _, err := c.SetACL("/dubbo", zk.WorldACL(zk.PermRead), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/dubbo/x.Y", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("create under the locked /dubbo = %v, want ErrNoAuth", err)
	}
	super := connect(t, reg.target())
	if err := super.AddAuth("digest", []byte(confSuperAuth)); err != nil {
		t.Fatal(err)
	}
	if _, err := super.SetACL("/dubbo", zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatalf("super setAcl /dubbo world:anyone:cdrwa: %v", err)
	}
	if _, err := c.Create("/dubbo/x.Y", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("create under /dubbo after the super user's repair: %v", err)
	}

	// A malformed digest is refused at start with the key and the recipe.
	bad := newRegistryProcess(t, reg.bin)
	bad.extra = []string{"--set", "registry.server.super-digest=super:let-me-in"}
	out := bad.startFails(t)
	for _, want := range []string{"registry.server.super-digest", "openssl dgst -binary -sha1"} {
		if !strings.Contains(out, want) {
			t.Errorf("start with a plain-text super-digest: output lacks %q:\n%s", want, out)
		}
	}
}
