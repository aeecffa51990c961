// Command cmd writes flagadmin's eventjson_gen.go (eventgen.Source) in
// the current directory: flagadmin's go:generate line runs it.
package main

import (
	"log"
	"os"

	"github.com/flagadmin/flagadmin/flagadmin/internal/eventgen"
)

func main() {
	src, err := eventgen.Source()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("eventjson_gen.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}
