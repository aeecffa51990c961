package flagadmin

// ValidName reports whether s may be a project id or a feature name: 1 to
// 100 letters, digits, or _ . ~ - (the rule seed files and stores follow).
func ValidName(s string) bool { return urlFriendly.MatchString(s) }
