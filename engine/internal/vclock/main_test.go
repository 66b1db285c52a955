package vclock_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/vclock"
)

// childEnv makes the test binary act as a program that calls vclock.Main.
// Its value picks how the program parses its arguments: "commandline" with
// flag.CommandLine and flag.Parse, "flagset" with a flag.FlagSet of its own
// (flag.CommandLine left unparsed).
const childEnv = "KALAB_VCLOCK_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		childMain(mode)
		fmt.Fprintln(os.Stderr, "vclock.Main returned")
		os.Exit(99)
	}
	os.Exit(m.Run())
}

// childMain is the program: it parses its own flags, then hands over to
// vclock.Main, sleeps a virtual hour in a bubble and exits with -code.
func childMain(mode string) {
	var code *int
	var msg *string
	var rest []string
	switch mode {
	case "commandline":
		code = flag.Int("code", 0, "exit code")
		msg = flag.String("msg", "", "message")
		flag.Parse()
		rest = flag.Args()
	case "panic":
		vclock.Main(func(h *vclock.Host) int {
			fmt.Println("before")
			panic("main panicked")
		})
	case "goexit":
		vclock.Main(func(h *vclock.Host) int {
			err := h.Run("goexit", runtime.Goexit)
			fmt.Println("err:", err)
			return 5
		})
	case "flagset":
		fs := flag.NewFlagSet("child", flag.ExitOnError)
		code = fs.Int("code", 0, "exit code")
		msg = fs.String("msg", "", "message")
		fs.Parse(os.Args[1:])
		rest = fs.Args()
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(98)
	}
	vclock.Main(func(h *vclock.Host) int {
		var virtual time.Duration
		start := time.Now()
		err := h.Run("sleep", func() {
			t0 := time.Now()
			time.Sleep(time.Hour)
			virtual = time.Since(t0)
		})
		real := time.Since(start)
		if err != nil {
			fmt.Fprintln(os.Stderr, "Run:", err)
			return 97
		}
		fmt.Printf("msg=%s rest=%q args=%q\n", *msg, rest, os.Args[1:])
		fmt.Printf("available=%v virtual=%v fast=%v\n", h.Available(), virtual, real < 2*time.Second)
		fmt.Fprintf(os.Stderr, "real=%v\n", real)
		return *code
	})
}

func TestMainPanicExits2(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=panic")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 || stdout.String() != "before\n" || !strings.Contains(stderr.String(), "panic: main panicked") {
		t.Fatalf("exit code %d, stdout %q, stderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// A run whose function calls runtime.Goexit makes synctest.Test fail its
// subtest; the harness must still print nothing on stdout.
func TestMainGoexitInRunIsQuiet(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=goexit")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	want := "err: vclock: goexit called runtime.Goexit\n"
	if code := cmd.ProcessState.ExitCode(); code != 5 || stdout.String() != want {
		t.Fatalf("exit code %d (want 5), stdout %q (want %q), stderr:\n%s", code, stdout.String(), want, stderr.String())
	}
}

func TestMainInChildProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"commandline", "flagset"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"-code=3", "-msg=hello", "x", "-test.v"}
			cmd := exec.Command(exe, args...)
			cmd.Env = append(os.Environ(), childEnv+"="+mode)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := -1
			if cmd.ProcessState != nil {
				code = cmd.ProcessState.ExitCode()
			}
			want := fmt.Sprintf("msg=hello rest=%q args=%q\navailable=true virtual=1h0m0s fast=true\n",
				[]string{"x", "-test.v"}, args)
			if code != 3 || stdout.String() != want {
				t.Fatalf("vclock.Main no longer runs a program on a virtual clock as it did: "+
					"a Go release may have changed testing.Main or testing/synctest, which this path depends on.\n"+
					"exit code %d (want 3, err %v)\nstdout:\n%s\nwant stdout:\n%s\nstderr:\n%s",
					code, err, stdout.String(), want, stderr.String())
			}
			if strings.Contains(stderr.String(), "PASS") || strings.Contains(stderr.String(), "FAIL") {
				t.Errorf("harness output on stderr:\n%s", stderr.String())
			}
			t.Logf("stderr: %s", strings.TrimSpace(stderr.String()))
		})
	}
}
