package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/postgres"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
)

// storeLocation is a parsed --store: a SQLite file or a PostgreSQL URL.
type storeLocation struct {
	sqlitePath  string
	postgresURL string
	// postgresHosts are the hosts the PostgreSQL URL reaches, a Unix
	// socket's directory for a socket.
	postgresHosts []string
	// postgresSSLMode is the URL's sslmode, or PGSSLMODE's, or libpq's
	// default, prefer.
	postgresSSLMode string
	// display names the store in messages, without a password.
	display string
}

// parseStore parses --store. Its errors never repeat a PostgreSQL URL's
// password.
func parseStore(raw string) (storeLocation, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return storeLocation{}, errors.New("--store: not a URL (sqlite:///PATH or postgres://...)")
	}
	loc := storeLocation{display: redacted(*u)}
	switch u.Scheme {
	case "sqlite":
		if u.Host != "" || !filepath.IsAbs(u.Path) || u.RawQuery != "" {
			return loc, fmt.Errorf("--store %q: a SQLite store is sqlite:///ABSOLUTE/PATH", loc.display)
		}
		dir := filepath.Dir(u.Path)
		if fi, err := os.Stat(dir); err != nil {
			return loc, fmt.Errorf("--store %q: its directory: %w", loc.display, err)
		} else if !fi.IsDir() {
			return loc, fmt.Errorf("--store %q: %s is not a directory", loc.display, dir)
		}
		loc.sqlitePath = u.Path
	case "postgres", "postgresql":
		cfg, err := pgx.ParseConfig(raw)
		if err != nil {
			return loc, fmt.Errorf("--store %q: not a PostgreSQL connection URL: %s", loc.display, parseCause(err, u))
		}
		loc.postgresURL = raw
		loc.postgresHosts = []string{cfg.Host}
		for _, f := range cfg.Fallbacks {
			if !slices.Contains(loc.postgresHosts, f.Host) {
				loc.postgresHosts = append(loc.postgresHosts, f.Host)
			}
		}
		loc.postgresSSLMode = cmp.Or(u.Query().Get("sslmode"), os.Getenv("PGSSLMODE"), "prefer")
	default:
		return loc, fmt.Errorf("--store %q: the scheme must be sqlite or postgres", loc.display)
	}
	return loc, nil
}

// checkPostgresTLS refuses a PostgreSQL store reached over the network
// without verifying the server's certificate, unless allowInsecure: every
// sslmode but verify-full and verify-ca lets whoever sits on the path read
// the records and the password, or pose as the server. A loopback host or
// a Unix socket needs no TLS.
func (loc storeLocation) checkPostgresTLS(allowInsecure bool) error {
	if loc.postgresURL == "" || allowInsecure || loc.postgresSSLMode == "verify-full" || loc.postgresSSLMode == "verify-ca" {
		return nil
	}
	for _, host := range loc.postgresHosts {
		if !isLocalHost(host) {
			return fmt.Errorf("--store %q: PostgreSQL at %s is reached with sslmode=%s, which does not verify the server: "+
				"add sslmode=verify-full and sslrootcert=/PATH/TO/ca.crt (the CA of the server's certificate) to the URL, "+
				"or set --postgres-allow-insecure to accept a connection that is not verified", loc.display, host, loc.postgresSSLMode)
		}
	}
	return nil
}

// isLocalHost reports whether a PostgreSQL host is this machine: a Unix
// socket's directory, localhost or a loopback address.
func isLocalHost(host string) bool {
	if strings.HasPrefix(host, "/") || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redacted is u with its password masked, in the user info and in a
// password parameter.
func redacted(u url.URL) string {
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// parseCause is what pgx found wrong with a PostgreSQL URL (an invalid
// sslmode, a CA file it cannot read), without the URL pgx repeats and
// with every password the URL holds masked.
func parseCause(err error, u *url.URL) string {
	cause := err.Error()
	if rest, ok := strings.CutPrefix(cause, "cannot parse `"); ok {
		if _, after, ok := strings.Cut(rest, "`: "); ok {
			cause = after
		}
	}
	passwords := u.Query()["password"]
	if p, ok := u.User.Password(); ok {
		passwords = append(passwords, p)
	}
	for _, p := range passwords {
		if p != "" {
			cause = strings.ReplaceAll(cause, p, "xxxxx")
		}
	}
	return cause
}

// openStore opens the store --store names.
func (o *Options) openStore(ctx context.Context) (store.Store, error) {
	loc, err := parseStore(o.Store)
	if err != nil {
		return nil, err
	}
	// PostgreSQL ends a query by its statement_timeout, keeping the
	// connection, a tenth before the request's deadline would cancel it.
	opts := store.Options{Cluster: o.ClusterName, AllClusters: o.ServeAllClusters, Retention: o.Retention, Reads: store.ReadLimits{MaxConns: o.StoreMaxReadConns, Timeout: o.QueryTimeout * 9 / 10}}
	if loc.postgresURL != "" {
		return postgres.Open(ctx, loc.postgresURL, opts)
	}
	return sqlite.Open(ctx, loc.sqlitePath, opts)
}

// storeDisplay names --store without a password.
func storeDisplay(raw string) string {
	loc, _ := parseStore(raw)
	return loc.display
}
