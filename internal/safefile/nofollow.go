package safefile

// ReadLimitOwn is ReadLimit through OpenOwn: a link at path, dangling or
// not, is refused (errors.Is(err, ErrLink)) without its target being
// opened.
func ReadLimitOwn(path string, limit int64, what string) ([]byte, error) {
	return readLimit(OpenOwn, path, limit, what)
}
