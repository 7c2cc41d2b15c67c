//go:build browser

// The browser check renders a sample report.html in headless Chromium
// (Debian's chromium package: apt-get install -y chromium) and checks what a
// reader sees. It sits behind the `browser` build tag so `make test` needs no
// browser:
//
//	go test -tags browser -run TestHTMLInChromium ./reports/render/
//
// The screenshot goes to $ZERODROP_SCREENSHOT (default
// /tmp/zerodrop-report.png) for a human to look at.
package render

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	// Not a skip: with -tags browser the caller asked for this check.
	t.Fatal("no chromium found (set $CHROMIUM or apt-get install -y chromium)")
	return ""
}

// headless runs chromium with the flags that keep it offline and stateless.
func headless(t *testing.T, bin string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v (waited up to 2m for it)\n%s", extra, err, stderr.String())
	}
	return stdout.Bytes()
}

func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	root, dirs := twoRuns(t)
	runs, err := Load(context.Background(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(root, HTMLFileName)
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := HTML(f, runs, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	dom := string(headless(t, bin, "--dump-dom", url))
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(dom, -1)) }
	// 9 of the 10 scenarios have a run file: a timeline and a pod-share plot each.
	if n := count(`<svg [^>]*class="plot timeline"`); n != 9 {
		t.Errorf("the browser's DOM has %d timeline plots, want 9", n)
	}
	if n := count(`<svg [^>]*class="plot podshare"`); n != 9 {
		t.Errorf("the browser's DOM has %d pod-share plots, want 9", n)
	}
	// Latency and pod state over time too (the sample runs' answers carry
	// readiness and connections).
	for _, class := range []string{"latency", "podstate"} {
		if n := count(`<svg [^>]*class="plot ` + class + `"`); n != 9 {
			t.Errorf("the browser's DOM has %d %s plots, want 9", n, class)
		}
	}
	if n := count(`<g class="marker marker-[a-z-]+"`); n < 20 {
		t.Errorf("the browser's DOM has %d event markers, want at least 20", n)
	}
	if !strings.Contains(dom, `<table class="matrix">`) {
		t.Errorf("the browser's DOM has no readiness matrix")
	}
	if n := count(`<tr class="role-(assertion|documentation)"><th scope="row">`); n != 5 {
		t.Errorf("the matrix has %d rows, want 5", n)
	}
	// Documentation cases say whether the hazard showed, never PASS.
	if !strings.Contains(dom, "DOC · hazard reproduced") || strings.Contains(dom, "DOC · PASS") {
		t.Errorf("documentation cases are not labelled 'hazard reproduced' (or one says PASS)")
	}
	if !strings.Contains(dom, "timeline unavailable") {
		t.Errorf("the scenario without a run file does not say its timeline is unavailable")
	}

	shot := os.Getenv("ZERODROP_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(os.TempDir(), "zerodrop-report.png")
	}
	_ = os.Remove(shot)
	headless(t, bin, "--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars", url)
	img, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer img.Close()
	pic, err := png.Decode(img)
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", shot, err)
	}
	b := pic.Bounds()
	if b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("screenshot is %dx%d, want 1280x2000", b.Dx(), b.Dy())
	}
	// A blank or failed page is (nearly) all one colour; the report has
	// badges, tables and plots, and the green of the ok bars must show.
	var inked, green int
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := pic.At(x, y).RGBA()
			if r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				inked++
			}
			if g > 0x8000 && r < 0x6000 && bl < 0x6000 {
				green++
			}
		}
	}
	samples := (b.Dx() / 4) * (b.Dy() / 4)
	if inked < samples/20 {
		t.Errorf("screenshot is almost blank: %d of %d samples inked", inked, samples)
	}
	if green < 200 {
		t.Errorf("screenshot shows no ok bars (%d green samples): the timeline did not render", green)
	}
	t.Logf("screenshot: %s (%d of %d samples inked, %d green)", shot, inked, samples, green)
}
