package webhooks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// LoadSinks reads the webhook configuration file at path
// and validates it: see ParseSinks.
func LoadSinks(path string) ([]flagadmin.WebhookSink, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %v", path, pe.Err)
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	sinks, err := ParseSinks(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sinks, nil
}

// ParseSinks reads a webhook configuration: a JSON or YAML list of sinks,
// each an object with the keys name, url, secret and filter, where filter
// is an object of the event search's filter parameters written as in the
// query string:
//
//   - name: audit
//     url: https://hooks.example.com/flagadmin
//     secret: s3cr3t
//     filter: {type: "IS_ANY_OF:feature-completed,feature-archived", project: "IS:checkout"}
//
// Unknown keys are rejected, and every sink is validated
// (flagadmin.ValidateWebhookSinks). The error is one line naming the sink
// and the field (a *flagadmin.SinkConfigError when it is about one sink).
func ParseSinks(r io.Reader) ([]flagadmin.WebhookSink, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(r).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty: want a list of sinks")
		}
		return nil, fmt.Errorf("not valid JSON or YAML: %s", oneLine(err.Error()))
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: want a list of sinks", root.Line)
	}
	sinks := make([]flagadmin.WebhookSink, 0, len(root.Content))
	for i, item := range root.Content {
		s, err := parseSink(item)
		if err != nil {
			return nil, &flagadmin.SinkConfigError{Index: i, Name: s.Name, Err: err}
		}
		sinks = append(sinks, s)
	}
	if err := flagadmin.ValidateWebhookSinks(sinks); err != nil {
		return nil, err
	}
	return sinks, nil
}

// parseSink reads one sink's object. The name is set as soon as it is
// read, so that an error can name the sink.
func parseSink(n *yaml.Node) (flagadmin.WebhookSink, error) {
	var s flagadmin.WebhookSink
	if n.Kind != yaml.MappingNode {
		return s, fmt.Errorf("line %d: want an object with name, url, secret and filter", n.Line)
	}
	// The name first, so that every other error names the sink.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" && n.Content[i+1].Kind == yaml.ScalarNode {
			s.Name = n.Content[i+1].Value
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if seen[key.Value] {
			return s, fmt.Errorf("%s: given twice (line %d)", key.Value, key.Line)
		}
		seen[key.Value] = true
		switch key.Value {
		case "name", "url", "secret":
			v, err := scalar(key.Value, val)
			if err != nil {
				return s, err
			}
			switch key.Value {
			case "name":
				s.Name = v
			case "url":
				s.URL = v
			case "secret":
				s.Secret = v
			}
		case "filter":
			if err := parseFilter(&s.Filter, val); err != nil {
				return s, err
			}
		default:
			return s, fmt.Errorf("%s: unknown field (line %d): a sink has name, url, secret and filter", strconv.Quote(key.Value), key.Line)
		}
	}
	return s, nil
}

// parseFilter reads a filter object into p: each key a filter parameter.
func parseFilter(p *flagadmin.EventSearchParams, n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("filter: want an object of filter parameters such as {\"type\": \"IS:feature-completed\"} (line %d)", n.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		path := "filter." + key.Value
		if seen[key.Value] {
			return fmt.Errorf("%s: given twice (line %d)", path, key.Line)
		}
		seen[key.Value] = true
		v, err := scalar(path, val)
		if err != nil {
			return err
		}
		if !flagadmin.SetFilterParam(p, key.Value, v) {
			return fmt.Errorf("%s: unknown filter parameter (line %d): use %v", strconv.Quote(path), key.Line, flagadmin.WebhookFilterParams)
		}
	}
	return nil
}

// scalar returns the text of a string (or number) value.
func scalar(path string, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", fmt.Errorf("%s: want a string (line %d)", path, n.Line)
	}
	return n.Value, nil
}

// oneLine joins the lines of a message.
func oneLine(s string) string {
	return string(bytes.Join(bytes.Fields([]byte(s)), []byte(" ")))
}
