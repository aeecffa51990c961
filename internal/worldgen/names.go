package worldgen

import "slices"

// Word lists the generator draws names from. None of them contains
// RareWord, so the rare word's matches are exactly the planted events.

var firstNames = []string{
	"alice", "bob", "carla", "david", "emma", "farid", "grace", "henrik", "ingrid", "jonas",
	"kari", "lars", "maria", "nils", "olivia", "pedro", "quinn", "ragnhild", "sofia", "tobias",
	"ulrike", "victor", "wanda", "xavier", "yusuf", "zoe", "amir", "beatriz", "chen", "dmitri",
	"elif", "fatima", "gustav", "hana", "ivan", "julia", "kenji", "leila", "marcus", "nora",
}

var lastNames = []string{
	"andersen", "berg", "costa", "dahl", "eriksen", "fischer", "garcia", "hansen", "ito", "jensen",
	"kowalski", "larsen", "moreau", "nakamura", "olsen", "petrov", "quintero", "rossi", "silva", "tanaka",
	"usman", "vik", "weber", "xu", "yilmaz", "zhang", "bakken", "haugen", "lund", "strand",
}

var serviceNames = []string{
	"deploy", "ci", "terraform", "release-bot", "sync", "backstage", "migrator", "scheduler", "audit", "github-actions",
}

var areas = []string{
	"payments", "checkout", "search", "onboarding", "billing", "mobile", "web", "platform", "identity", "notifications",
	"analytics", "growth", "catalog", "inventory", "shipping", "pricing", "support", "admin", "data", "ml",
	"infra", "security", "partner", "marketing", "reporting", "messaging", "recommendations", "loyalty", "fraud", "compliance",
}

var components = []string{
	"api", "app", "service", "frontend", "backend", "worker", "gateway", "portal", "sdk", "core",
	"ios", "android", "dashboard", "pipeline", "scheduler", "edge", "console", "widgets", "engine", "store",
}

var featureAdjectives = []string{
	"new", "enable", "beta", "redesigned", "fast", "async", "unified", "improved", "legacy", "experimental",
	"smart", "instant", "simplified", "personalized", "batched", "cached", "streaming", "secure", "global", "adaptive",
	"one-click", "guided", "express", "lazy", "native",
}

var featureNouns = []string{
	"checkout-flow", "search-ranking", "onboarding-wizard", "dark-mode", "pricing-page", "cart", "recommendations",
	"invoice-export", "password-reset", "login", "signup-form", "push-notifications", "email-digest", "payment-retry",
	"address-validation", "product-page", "order-history", "refunds", "subscriptions", "coupon-engine", "tax-calculation",
	"shipping-estimates", "inventory-sync", "image-resizing", "profile-page", "two-factor-auth", "sso", "audit-log",
	"rate-limiter", "feature-tour", "chat-widget", "search-autocomplete", "map-view", "reviews", "wishlist", "gift-cards",
	"currency-switcher", "language-picker", "receipt-pdf", "fraud-scoring", "kyc-check", "session-replay", "dashboard-v2",
	"csv-import", "bulk-edit", "webhooks", "graphql-endpoint", "pagination", "media-upload", "video-player",
	"loyalty-points", "referral-program", "abandoned-cart-mail", "price-alerts", "store-locator", "delivery-slots",
	"returns-portal", "customer-notes", "sla-timer", "queue-priority",
}

var featureQualifiers = []string{
	"v2", "v3", "rollout", "killswitch", "eu", "us", "mobile", "web", "ab-test", "phase-2",
	"internal", "pilot", "canary", "q1", "q3",
}

var descriptionPhrases = []string{
	"Gradual rollout of the redesigned experience",
	"Guards the new backend path until load tests pass",
	"Experiment owned by the growth team",
	"Emergency switch for the downstream provider",
	"Grants early access to selected tenants",
	"Replaces the legacy implementation behind a flag",
	"Temporary flag for the migration, remove after cleanup",
	"Controls the new pricing rules in selected markets",
	"Operational toggle for the batch jobs",
	"Beta program for power users",
}

// customers appear in constraints and change requests; they are common.
var customers = []string{
	"acme-corp", "globex", "initech", "umbrella-corp", "hooli", "stark-industries", "wayne-enterprises", "soylent",
	"cyberdyne", "tyrell-corp", "wonka-industries", "massive-dynamic", "oscorp", "aperture-science", "black-mesa",
	"gringotts", "monsters-inc", "pied-piper", "dunder-mifflin", "prestige-worldwide",
}

// RareCustomer is the tenant planted in a small fraction of strategy
// payloads; RareWord, a substring of it, is the selective free-text query.
const (
	RareCustomer = "vandelay-industries"
	RareWord     = "vandelay"
)

// CommonWords returns words that many events' payloads hold, from about
// 1% (a customer) to about a third (an environment) of a world's events:
// free-text searches that match a large share of the history, as a user
// looking for an environment, a strategy, a region or a plan sends them.
func CommonWords() []string { return slices.Clone(commonWords) }

var commonWords = []string{
	"development", "production", "staging", "enabled", "default", "release",
	"region", "country", "plan", "control", "enterprise", "eu-west-1", "acme-corp",
}

var regions = []string{"eu-west-1", "eu-north-1", "us-east-1", "us-west-2", "ap-southeast-2", "ap-northeast-1"}

var countries = []string{"NO", "SE", "DK", "DE", "GB", "FR", "ES", "US", "CA", "BR", "JP", "AU", "IN"}

var plans = []string{"free", "starter", "pro", "business", "enterprise"}

var environments = []string{"development", "staging", "production"}

var strategyNames = []string{"flexibleRollout", "flexibleRollout", "flexibleRollout", "flexibleRollout", "flexibleRollout",
	"flexibleRollout", "flexibleRollout", "default", "default", "userWithId", "remoteAddress", "applicationHostname"}

var variantNames = []string{"control", "variant-a", "variant-b", "blue", "green", "compact", "expanded", "on", "off"}

var sdkVersions = []string{"unleash-client-node:6.1.2", "unleash-client-java:9.2.4", "unleash-client-go:4.1.0",
	"unleash-client-python:6.0.1", "unleash-proxy-client-js:3.6.0", "unleash-client-ruby:5.0.7"}

var tagTypes = []string{"simple", "team", "jira", "release"}

var releaseNames = []string{"q1-launch", "q2-launch", "q3-launch", "q4-launch", "black-friday", "summer-sale", "gdpr", "big-bang-migration"}

var contextFields = []string{"userId", "tenantId", "appName", "region", "country", "plan", "sessionId", "currentTime"}
