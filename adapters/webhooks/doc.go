// Package webhooks delivers the event log to webhook sinks, at least once:
// each matching event is POSTed as its Event JSON, signed with the sink's
// secret (HMAC-SHA256 over "<timestamp>.<body>"), in id order, retried with
// exponential backoff until a 2xx answer. The position of each sink is kept
// in the database (flagadmin.SinkStore) and advanced after each delivery,
// and a lease in the database makes exactly one server deliver for a sink
// at a time. ParseSinks and LoadSinks read the configuration file; Engine
// runs the delivery; Sign and Verify are the signature.
package webhooks
