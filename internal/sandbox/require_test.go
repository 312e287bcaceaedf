package sandbox

import (
	"os"
	"testing"
)

// skipUnlessCI skips a test whose part is missing here, or fails it in CI
// (CI or OLLIE_REQUIRE_ALL set, as .ci/run has them): testutil.Require,
// which this package's tests cannot import.
func skipUnlessCI(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" || os.Getenv("OLLIE_REQUIRE_ALL") != "" {
		t.Fatalf("%s, and this is CI", why)
	}
	t.Skip(why)
}
