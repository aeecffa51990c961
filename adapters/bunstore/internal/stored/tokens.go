package stored

// The tokens of a search text are its longest runs of characters that are
// none of SearchTokenDelimiters: the JSON structural characters, the
// double quote and white space. A text contains a string that holds none
// of them if and only if one of its tokens contains that string, so a
// substring query without a delimiter can be answered from the texts'
// tokens (PostgreSQL's token index, internal/textindex).
const (
	// SearchTokenDelimiters are the characters that end a token.
	SearchTokenDelimiters = "[] \t\n\r\"{}:,"
	// SearchTokenPattern is the regular expression (PostgreSQL's) of a run
	// of SearchTokenDelimiters, at which a text is split into tokens.
	SearchTokenPattern = `[][ \t\n\r"{}:,]+`
)
