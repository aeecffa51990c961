package stored

import (
	"encoding/hex"
	"strings"
)

// The project tokens of SQLite's full-text index (events_tokens'
// project_token column), one token a project whatever its characters and
// their case (the tokenizer folds ASCII letters, and hex digits alike):
// NoProjectToken for an event without one, ProjectListToken for one
// naming several (comma-joined, which the token does not tell apart), else
// "w" and the project's bytes in hexadecimal (ProjectToken).
const (
	NoProjectToken   = "n"
	ProjectListToken = "c"
	// projectTokenPrefix begins the token of a project alone.
	projectTokenPrefix = "w"
)

// ProjectTokenSQL is the SQL expression (SQLite's) of the project token of
// the project in the expression project.
func ProjectTokenSQL(project string) string {
	return "CASE WHEN " + project + " IS NULL THEN '" + NoProjectToken + "' WHEN instr(" + project + ", ',') > 0 THEN '" +
		ProjectListToken + "' ELSE '" + projectTokenPrefix + "' || hex(" + project + ") END"
}

// ProjectToken returns the token of an event whose project is project
// alone, and false when project holds a comma: only a list of projects
// can equal it, whose token is ProjectListToken.
func ProjectToken(project string) (string, bool) {
	return projectTokenPrefix + hex.EncodeToString([]byte(project)), !strings.Contains(project, ",")
}
