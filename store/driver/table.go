package driver

import "fmt"

// CheckTableName returns an error naming the table parameter when name is not a plain SQL
// identifier of at most maxLen characters: letters, digits and underscores, starting with a
// letter or an underscore. The SQL backends accept only such names, so that a name can be put
// in SQL text safely and means the same quoted or not; maxLen is the server's limit.
func CheckTableName(name string, maxLen int) error {
	ok := name != "" && len(name) <= maxLen
	for i, c := range name {
		if !ok {
			break
		}
		ok = c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9'
	}
	if !ok {
		return fmt.Errorf("parameter table: %q is not a valid table name (letters, digits and underscores, starting with a letter or underscore, at most %d)", name, maxLen)
	}
	return nil
}
