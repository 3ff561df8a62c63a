// Package conform checks, from the outside, that an HTTP endpoint behaves
// as an idemkit-guarded route does once every hop between a client and the
// function has had its say: CDNs, WAFs, API gateways and proxies know
// nothing of the Idempotency-Key header, and may drop it on the way in, or
// drop Idempotent-Replayed and Retry-After on the way out. Run checks the
// endpoint with the caller's own headers and sample body, and says which
// direction lost what.
//
// Run leaves two records, under the keys Result.Keys names, in the tenant
// the caller's headers imply (the sample request's and the race's), and
// the business effect of the two executions they stand for. A check that
// would execute the handler once more without a key reaching it is
// skipped once the key is known not to reach it.
package conform

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Verdict is one check's outcome.
type Verdict string

// The verdicts. Only Fail makes Result.OK false.
const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	// Inconclusive: the check ran, and what it saw neither proves nor
	// refutes the rule (all concurrent duplicates were replays: the
	// handler answered before any of them arrived).
	Inconclusive Verdict = "inconclusive"
	// Skipped: the check was not run; Detail says why.
	Skipped Verdict = "skipped"
)

// Check is one rule checked and what was seen.
type Check struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	Detail  string  `json:"detail"`
}

// Result is a run's report.
type Result struct {
	URL    string   `json:"url"`
	Method string   `json:"method"`
	Keys   []string `json:"keys"`
	Checks []Check  `json:"checks"`
	// Hops are the intermediaries the answers named (Via, Server and the
	// like), to tell where a header was lost.
	Hops []string `json:"hops"`
	OK   bool     `json:"ok"`
}

// Config says what to check.
type Config struct {
	// URL is the guarded route (a POST or PATCH endpoint).
	URL string
	// Method is the route's method. Empty: POST.
	Method string
	// Header is sent with every request: the caller's authorization
	// (which implies the tenant) and anything else the route needs.
	Header http.Header
	// Body is a request the route accepts and answers with a cached
	// outcome (2xx, or a deterministic 4xx).
	Body []byte
	// ContentType is the body's type. Empty: application/json.
	ContentType string
	// ChangedBody is sent under the sample's key to draw a 422. Nil: Body
	// with one member added (a JSON object), else Body with a byte added.
	ChangedBody []byte
	// RaceBody is sent by the concurrent duplicates. Nil: Body. A request
	// the handler takes a while to answer makes the duplicates overlap it.
	RaceBody []byte
	// Concurrency is how many copies of the race request are sent at once.
	// Zero: 8. At least 2.
	Concurrency int
	// GetURL is sent a GET with the sample's key and with a malformed one.
	// Empty: URL.
	GetURL string
	// RequireKey: the route refuses a request without a key (400).
	RequireKey bool
	// KeyPrefix starts every key Run sends. Empty: "conform-". A random
	// run id follows it.
	KeyPrefix string
	// MaxKeyLen is the longest key the route accepts. Zero: 255.
	MaxKeyLen int
	// Client sends the requests. Nil: a client of its own.
	Client *http.Client
}

// DefaultConcurrency is Config.Concurrency's default.
const DefaultConcurrency = 8

// ErrConfig is wrapped by Run's error for a configuration it cannot run.
var ErrConfig = errors.New("conform: bad configuration")

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) replayed() bool { return a.header.Get("Idempotent-Replayed") == "true" }

func (a answer) problem() bool {
	mt, _, _ := mime.ParseMediaType(a.header.Get("Content-Type"))
	return mt == "application/problem+json"
}

func (a answer) String() string {
	b := a.body
	if len(b) > 200 {
		b = append(b[:200:200], "..."...)
	}
	return fmt.Sprintf("%d %s", a.status, bytes.TrimSpace(b))
}

type runner struct {
	cfg    Config
	client *http.Client
	mu     sync.Mutex
	hops   map[string]bool // guarded by mu
	// replayHeaderLost: the replay check found Idempotent-Replayed
	// dropped, so a replay looks like an execution.
	replayHeaderLost bool
}

// Run checks the endpoint. Its error is for what kept it from checking
// (a bad configuration, an endpoint it cannot reach at all); a rule broken
// is a failed Check, and Result.OK false.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = withDefaults(cfg)
	var id [6]byte
	_, _ = rand.Read(id[:])
	base := cfg.KeyPrefix + hex.EncodeToString(id[:])
	if err := validate(cfg, base); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, client: newClient(cfg), hops: map[string]bool{}}
	res := &Result{URL: cfg.URL, Method: cfg.Method}
	key, raceKey := base+"-replay", base+"-race"
	res.Keys = []string{key, raceKey}
	add := func(name string, v Verdict, format string, args ...any) {
		res.Checks = append(res.Checks, Check{Name: name, Verdict: v, Detail: fmt.Sprintf(format, args...)})
	}

	first, err := r.send(ctx, cfg.Method, cfg.URL, cfg.Body, key)
	if err != nil {
		return nil, err
	}
	if r.firstAndReplay(ctx, first, key, add) {
		r.quoted(ctx, first, key, add)
		r.changedBody(ctx, key, add)
		r.race(ctx, raceKey, add)
		r.badKeys(ctx, base, add)
	} else {
		for _, name := range []string{"quoted-key", "changed-body", "concurrent-duplicate", "long-key", "malformed-key", "two-keys", "missing-key"} {
			add(name, Skipped, "not run: the key does not reach the guard, so each request would execute the handler again")
		}
	}
	r.get(ctx, key, add)
	res.OK = !slices.ContainsFunc(res.Checks, func(c Check) bool { return c.Verdict == Fail })
	res.Hops = r.hopList()
	return res, nil
}

// withDefaults returns cfg with every empty field that has a default set
// to it; it leaves fields the caller set as they are.
func withDefaults(cfg Config) Config {
	if cfg.Method == "" {
		cfg.Method = http.MethodPost
	}
	if cfg.ContentType == "" {
		cfg.ContentType = "application/json"
	}
	if cfg.ChangedBody == nil {
		cfg.ChangedBody = changed(cfg.Body)
	}
	if cfg.RaceBody == nil {
		cfg.RaceBody = cfg.Body
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.GetURL == "" {
		cfg.GetURL = cfg.URL
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "conform-"
	}
	if cfg.MaxKeyLen <= 0 {
		cfg.MaxKeyLen = 255
	}
	return cfg
}

// validate returns an error wrapping ErrConfig for the first thing that
// keeps cfg, with its defaults set, from being run with keys starting
// with base; nil when it can be run.
func validate(cfg Config, base string) error {
	if cfg.URL == "" {
		return fmt.Errorf("%w: no URL", ErrConfig)
	}
	switch cfg.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodDelete:
		return fmt.Errorf("%w: method %s ignores the Idempotency-Key header: check a POST or PATCH route", ErrConfig, cfg.Method)
	}
	if len(cfg.Body) == 0 {
		return fmt.Errorf("%w: no sample body", ErrConfig)
	}
	if cfg.Concurrency < 2 {
		return fmt.Errorf("%w: concurrency %d: a race needs two requests at least", ErrConfig, cfg.Concurrency)
	}
	if len(base)+len("-replay") > cfg.MaxKeyLen {
		return fmt.Errorf("%w: key prefix of %d bytes leaves no room under the %d-byte cap", ErrConfig, len(cfg.KeyPrefix), cfg.MaxKeyLen)
	}
	for _, c := range []byte(cfg.KeyPrefix) {
		if c < 0x21 || c > 0x7e || c == '"' {
			return fmt.Errorf("%w: key prefix %q: printable ASCII without quotes or spaces only", ErrConfig, cfg.KeyPrefix)
		}
	}
	return nil
}

// newClient returns cfg's Client, or else a client of its own that keeps
// a connection open for each concurrent copy.
func newClient(cfg Config) *http.Client {
	if cfg.Client != nil {
		return cfg.Client
	}
	return &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency + 2, ForceAttemptHTTP2: true}}
}

// hopList returns the hops the answers named so far, sorted.
func (r *runner) hopList() []string {
	r.mu.Lock()
	var hops []string
	for h := range r.hops {
		hops = append(hops, h)
	}
	r.mu.Unlock()
	slices.Sort(hops)
	return hops
}

// hopHeaders name the intermediaries an answer passed through.
var hopHeaders = []string{"Via", "Server", "X-Cache", "X-Amz-Cf-Id", "Apigw-Requestid", "X-Amzn-Requestid", "Cf-Ray", "X-Served-By"}

func (r *runner) send(ctx context.Context, method, url string, body []byte, keys ...string) (answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return answer{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	for k, vs := range r.cfg.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if body != nil {
		req.Header.Set("Content-Type", r.cfg.ContentType)
	}
	for _, k := range keys {
		req.Header.Add("Idempotency-Key", k)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("conform: %s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return answer{}, fmt.Errorf("conform: %s %s: reading the answer: %w", method, url, err)
	}
	r.mu.Lock()
	for _, h := range hopHeaders {
		if v := resp.Header.Get(h); v != "" {
			if h != "Via" && h != "Server" {
				v = "present" // a request id: the header names the hop
			}
			r.hops[h+": "+v] = true
		}
	}
	r.mu.Unlock()
	return answer{resp.StatusCode, resp.Header, b}, nil
}

// cached says whether a status is one the guard stores and replays.
func cached(status int) bool {
	switch status {
	case 401, 403, 408, 429, 502, 503, 504:
		return false
	}
	return status <= 500
}

const (
	requestHop = "the Idempotency-Key request header does not reach the guard: a hop between this client and the function drops it (or the route is not guarded)"
	answerHop  = "a hop between the function and this client drops the answer's %s header"
)

func (r *runner) firstAndReplay(ctx context.Context, first answer, key string, add func(string, Verdict, string, ...any)) bool {
	switch {
	case first.replayed():
		add("fresh", Fail, "the first request with the new key %q was answered as a replay: a cache between this client and the function answers for it", key)
	case !cached(first.status):
		add("fresh", Fail, "the sample request got %s: a transient outcome the guard never stores; give a body and headers the route accepts", first)
		return false
	case first.status == http.StatusBadRequest && bytes.Contains(first.body, []byte("key-missing")):
		add("fresh", Fail, requestHop+": the first request, sent with key %q, got %s", key, first)
		return false
	case first.status == http.StatusConflict || first.status == http.StatusUnprocessableEntity || (first.status == http.StatusBadRequest && first.problem()):
		add("fresh", Fail, "the sample request with a new key got %s", first)
		return false
	default:
		add("fresh", Pass, "%d without Idempotent-Replayed", first.status)
	}
	again, err := r.send(ctx, r.cfg.Method, r.cfg.URL, r.cfg.Body, key)
	if err != nil {
		add("replay", Fail, "%v", err)
		return false
	}
	same := again.status == first.status && bytes.Equal(again.body, first.body)
	switch {
	case same && again.replayed():
		add("replay", Pass, "the same %d and body, with Idempotent-Replayed: true", again.status)
		return true
	case same:
		r.replayHeaderLost = true
		add("replay", Fail, answerHop+" (the answer is the first one byte for byte, without it)", "Idempotent-Replayed")
		return true
	case again.replayed():
		add("replay", Fail, "a replay that is not the first answer: first %s, replay %s", first, again)
		return true
	default:
		add("replay", Fail, requestHop+": the second request executed again (first %s, second %s)", first, again)
		return false
	}
}

func (r *runner) quoted(ctx context.Context, first answer, key string, add func(string, Verdict, string, ...any)) {
	a, err := r.send(ctx, r.cfg.Method, r.cfg.URL, r.cfg.Body, `"`+key+`"`)
	switch {
	case err != nil:
		add("quoted-key", Fail, "%v", err)
	case a.status == first.status && bytes.Equal(a.body, first.body):
		add("quoted-key", Pass, "the key sent as \"%s\" replayed the bare key's answer", key)
	default:
		add("quoted-key", Fail, "the quoted key got %s, not the bare key's answer", a)
	}
}

func (r *runner) changedBody(ctx context.Context, key string, add func(string, Verdict, string, ...any)) {
	a, err := r.send(ctx, r.cfg.Method, r.cfg.URL, r.cfg.ChangedBody, key)
	switch {
	case err != nil:
		add("changed-body", Fail, "%v", err)
	case a.status == http.StatusUnprocessableEntity && a.problem():
		add("changed-body", Pass, "422 application/problem+json")
	case a.status == http.StatusUnprocessableEntity:
		add("changed-body", Fail, "422 with Content-Type %q, want application/problem+json: a hop rewrites the answer", a.header.Get("Content-Type"))
	default:
		add("changed-body", Fail, "a changed body under a used key got %s, want 422", a)
	}
}

// race sends Concurrency copies at once. Exactly one may execute; the
// others get 409 with Retry-After (they arrived while it ran) or its
// replay (after). All replays prove nothing about 409: the handler was
// faster than the duplicates.
func (r *runner) race(ctx context.Context, key string, add func(string, Verdict, string, ...any)) {
	answers, errs := r.sendAtOnce(ctx, key)
	t := raceTally{replayHeaderLost: r.replayHeaderLost}
	for i := range answers {
		t.count(&answers[i], errs[i])
	}
	t.judge(len(answers), add)
}

// sendAtOnce sends Concurrency copies of the race request under key,
// released together, and returns each copy's answer or error.
func (r *runner) sendAtOnce(ctx context.Context, key string) ([]answer, []error) {
	n := r.cfg.Concurrency
	answers := make([]answer, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i], errs[i] = r.send(ctx, r.cfg.Method, r.cfg.URL, r.cfg.RaceBody, key)
		})
	}
	close(start)
	wg.Wait()
	return answers, errs
}

// raceTally counts what the race's copies got.
type raceTally struct {
	replayHeaderLost                                   bool // Idempotent-Replayed is dropped: a replay looks like an execution
	fresh, conflicts, replays, noRetryAfter, throttled int
	other                                              []string // the errors and answers no rule expects
	first                                              *answer  // the first execution's answer
}

// count files one copy's answer a (or its error err) under exactly one
// of the tally's counts.
func (t *raceTally) count(a *answer, err error) {
	switch {
	case err != nil:
		t.other = append(t.other, err.Error())
	case a.status == http.StatusConflict && a.problem():
		t.conflicts++
		if a.header.Get("Retry-After") == "" {
			t.noRetryAfter++
		}
	case a.replayed():
		t.replays++
	case a.status == http.StatusTooManyRequests:
		// Throttled before the function (past its concurrency): the
		// copy never reached the guard.
		t.throttled++
	case cached(a.status) && a.status != http.StatusConflict && a.status != http.StatusUnprocessableEntity:
		t.countExecution(a)
	default:
		t.other = append(t.other, a.String())
	}
}

// countExecution counts a, a cached outcome without Idempotent-Replayed,
// as an execution, unless the header is known to be dropped and a is the
// first execution's answer again: then it is counted as its replay.
func (t *raceTally) countExecution(a *answer) {
	if t.replayHeaderLost && t.first != nil && a.status == t.first.status && bytes.Equal(a.body, t.first.body) {
		t.replays++
		return
	}
	if t.first == nil {
		t.first = a
	}
	t.fresh++
}

// judge adds the concurrent-duplicate check for n copies: Fail when more
// or fewer than one executed or an answer broke a rule, Inconclusive when
// no duplicate could have drawn a 409, and Pass otherwise.
func (t *raceTally) judge(n int, add func(string, Verdict, string, ...any)) {
	counts := fmt.Sprintf("%d copies: %d executed, %d got 409, %d replays", n, t.fresh, t.conflicts, t.replays)
	if t.throttled > 0 {
		counts += fmt.Sprintf(", %d throttled (429: more copies than the function's concurrency)", t.throttled)
	}
	switch {
	case t.fresh > 1:
		add("concurrent-duplicate", Fail, "%s: the handler ran more than once for one key", counts)
	case len(t.other) > 0:
		add("concurrent-duplicate", Fail, "%s; other answers: %s", counts, strings.Join(t.other, "; "))
	case t.noRetryAfter > 0:
		add("concurrent-duplicate", Fail, counts+": "+answerHop+" (%d of the 409s came without it)", "Retry-After", t.noRetryAfter)
	case t.fresh == 0:
		add("concurrent-duplicate", Fail, "%s: no copy executed", counts)
	case t.replayHeaderLost && t.conflicts == 0:
		add("concurrent-duplicate", Inconclusive, "%s: with Idempotent-Replayed dropped, a replay cannot be told from an execution, and no duplicate overlapped the execution", counts)
	case t.conflicts == 0 && t.replays == 0:
		add("concurrent-duplicate", Inconclusive, "%s: no duplicate reached the guard while the first ran, so the 409 was never drawn; send fewer copies (--concurrency) than the function's concurrency", counts)
	case t.conflicts == 0:
		add("concurrent-duplicate", Inconclusive, "%s: the handler answered before any duplicate arrived, so the 409 was never drawn; give a slower request (--race-body) or more copies (--concurrency)", counts)
	default:
		add("concurrent-duplicate", Pass, "%s, every 409 with Retry-After", counts)
	}
}

func (r *runner) badKeys(ctx context.Context, base string, add func(string, Verdict, string, ...any)) {
	long := base + "-" + strings.Repeat("x", r.cfg.MaxKeyLen-len(base))
	type probe struct {
		name, what string
		keys       []string
		skip       bool
	}
	for _, p := range []probe{
		{"long-key", fmt.Sprintf("a %d-byte key", len(long)), []string{long}, false},
		{"malformed-key", "a key with non-ASCII bytes", []string{base + "-clé"}, false},
		{"two-keys", "two different keys in one request", []string{base + "-a", base + "-b"}, false},
		{"missing-key", "no key", nil, !r.cfg.RequireKey},
	} {
		if p.skip {
			add(p.name, Skipped, "not run: the route takes requests without a key (--require-key says it must not)")
			continue
		}
		a, err := r.send(ctx, r.cfg.Method, r.cfg.URL, r.cfg.Body, p.keys...)
		switch {
		case err != nil:
			add(p.name, Fail, "%v", err)
		case a.status == http.StatusBadRequest:
			add(p.name, Pass, "%s: 400", p.what)
		default:
			add(p.name, Fail, "%s got %s, want 400", p.what, a)
		}
	}
}

func (r *runner) get(ctx context.Context, key string, add func(string, Verdict, string, ...any)) {
	var seen []string
	for _, k := range []string{key, "bad key \u00e9"} {
		a, err := r.send(ctx, http.MethodGet, r.cfg.GetURL, nil, k)
		switch {
		case err != nil:
			add("get-ignores-key", Fail, "%v", err)
			return
		case a.replayed():
			add("get-ignores-key", Fail, "a GET with key %q was answered as a replay", k)
			return
		case a.status == http.StatusBadRequest && a.problem():
			add("get-ignores-key", Fail, "a GET with key %q got %s: the key was checked on a GET", k, a)
			return
		}
		seen = append(seen, fmt.Sprint(a.status))
	}
	add("get-ignores-key", Pass, "GET %s with the used key and a malformed one: %s, neither replayed nor refused for the key", r.cfg.GetURL, strings.Join(seen, " and "))
}

// changed returns body with one difference the fingerprint sees: a
// member added to a JSON object, else a byte added.
func changed(body []byte) []byte {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err == nil {
		obj["conform_changed"] = json.RawMessage(`true`)
		b, err := json.Marshal(obj)
		if err == nil {
			return b
		}
	}
	return append(append([]byte(nil), body...), '!')
}
