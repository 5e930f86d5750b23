// The grammar text format (GBNF, as llama.cpp writes it; docs/structured_output.md):
//   root   ::= "{" ws pair ("," ws pair)* "}"     # rules; `root` is where matching starts
//   pair   ::= [a-z]+ ":" ws ( digit{1,3} | "null" )
//   digit  ::= [0-9]
//   ws     ::= [ \t\n]?
// Literals "..." and character classes [...] / [^...] with escapes (\n \t \r \\ \" \] \xHH
// \uHHHH \UHHHHHHHH), `.` (any character), grouping ( ), alternation |, repetition * + ? {m}
// {m,} {m,n}, comments from # to the end of the line. A rule ends at the end of its line unless
// the next line starts with | or the line ends inside parentheses.
#pragma once
#include <string_view>

#include "structured/grammar.h"

namespace plexus::structured {

// InputError "grammar line L, column C: ..." on a syntax error, an undefined or twice-defined
// rule, a missing root rule or a left-recursive rule. `source` names the text in messages
// (e.g. the --grammar file).
Grammar parse_grammar(std::string_view text, std::string_view source = "grammar");

}  // namespace plexus::structured
