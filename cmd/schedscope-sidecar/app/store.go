package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
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
		if _, err := pgx.ParseConfig(raw); err != nil {
			return loc, fmt.Errorf("--store %q: not a PostgreSQL connection URL: %s", loc.display, parseCause(err, u))
		}
		loc.postgresURL = raw
	default:
		return loc, fmt.Errorf("--store %q: the scheme must be sqlite or postgres", loc.display)
	}
	return loc, nil
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
	opts := store.Options{Cluster: o.ClusterName, Retention: o.Retention, Reads: store.ReadLimits{MaxConns: o.StoreMaxReadConns, Timeout: o.QueryTimeout * 9 / 10}}
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
