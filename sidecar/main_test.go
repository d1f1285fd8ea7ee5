package sidecar_test

import (
	"fmt"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMain also runs this test binary as one of the attackers of issue #23
// (inotifyHogEnv, attackEnv) instead of the tests.
//
// inotifyHogEnv makes this test binary, started again by
// TestWatchUnavailableThroughTheBinary as another user, the attacker of
// issue #23: it holds every inotify instance its user may create.
const inotifyHogEnv = "AGENT_SIDECAR_TEST_INOTIFY_HOG"

func TestMain(m *testing.M) {
	if os.Getenv(inotifyHogEnv) == "1" {
		os.Exit(inotifyHog())
	}
	if plan := os.Getenv(attackEnv); plan != "" {
		os.Exit(attack(plan))
	}
	os.Exit(m.Run())
}

// inotifyHog creates inotify instances until the kernel refuses one, says
// how many it holds ("holding N"), and holds them until its stdin closes
// or it is killed.
func inotifyHog() int {
	n := 0
	for {
		_, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err == unix.EMFILE {
			break
		}
		if err != nil {
			fmt.Printf("error %v\n", err)
			return 1
		}
		n++
	}
	fmt.Printf("holding %d\n", n)
	io.Copy(io.Discard, os.Stdin)
	return 0
}
