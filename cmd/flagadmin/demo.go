package main

import _ "embed"

// demoSeed is the demo world of "serve --demo", a seed file: four users (an
// Admin, an Editor, a Viewer and a project owner), two service accounts, two
// groups, four projects (open, protected, private, and an archived one),
// eleven features of every type, some stale, with tags and lifecycle stages,
// 44 events from March to November 2026, and tokens of every kind.
//
//go:embed demo.json
var demoSeed []byte
