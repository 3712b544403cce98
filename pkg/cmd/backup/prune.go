package backup

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"
)

// snapshotPattern matches the names snapshotName gives, and nothing else:
// prune deletes only files that a backup wrote.
var snapshotPattern = regexp.MustCompile(`^muster-etcd-[0-9]{8}T[0-9]{6}Z\.db$`)

// snapshotName is the file a snapshot taken at now is written to. The
// names sort as the times do, so the oldest sorts first.
func snapshotName(now time.Time) string {
	return "muster-etcd-" + now.UTC().Format("20060102T150405Z") + ".db"
}

// prune deletes the oldest snapshots in dir beyond keep, and returns the
// paths it deleted.
func prune(dir string, keep int) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && snapshotPattern.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var pruned []string
	for len(names) > keep {
		path := filepath.Join(dir, names[0])
		if err := os.Remove(path); err != nil {
			return pruned, fmt.Errorf("deleting old snapshot %s: %w", path, err)
		}
		pruned = append(pruned, path)
		names = names[1:]
	}
	return pruned, nil
}
