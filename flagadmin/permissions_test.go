package flagadmin_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// gateNeed is what an operation needs of its caller, as the tests state it.
type gateNeed int

const (
	// anyAdminAPI: any principal but client and frontend tokens.
	anyAdminAPI gateNeed = iota
	// rootAdminOnly: the ADMIN permission.
	rootAdminOnly
	// updateProt: UPDATE_FEATURE on the protected project "prot" of
	// serviceWorld, whose only member is Mia (user 4, a Viewer).
	updateProt
)

// gateCaller is a principal and what the gate lets it do.
type gateCaller struct {
	name string
	p    flagadmin.Principal
	// may is what it is allowed, by need; a need not in it is refused
	// with refusal.
	may map[gateNeed]bool
	// refusal is the message of the refusal, by need.
	refusal map[gateNeed]string
}

const (
	msgNotAdminAPI     = "This token cannot be used for the admin API."
	msgNotRootAdmin    = "You need the ADMIN permission to do this."
	msgNotUpdateOnProt = `You need the UPDATE_FEATURE permission on project "prot" to do this.`
)

// gateCallers returns one principal of each kind, over serviceWorld.
func gateCallers(t *testing.T) []gateCaller {
	t.Helper()
	svc, store := serviceWorldService(t)
	ctx := context.Background()
	token := func(typ flagadmin.TokenType) flagadmin.Principal {
		t.Helper()
		secret, _, err := svc.CreateAPIToken(ctx, flagadmin.System, flagadmin.NewAPIToken{Name: string(typ), Type: typ, Project: "open", Environment: "development"})
		if err != nil {
			t.Fatalf("CreateAPIToken(%s): %v", typ, err)
		}
		p, err := svc.Authenticate(ctx, secret)
		if err != nil {
			t.Fatalf("Authenticate(%s token): %v", typ, err)
		}
		return p
	}
	all := map[gateNeed]bool{anyAdminAPI: true, rootAdminOnly: true, updateProt: true}
	user := map[gateNeed]string{rootAdminOnly: msgNotRootAdmin, updateProt: msgNotUpdateOnProt}
	none := map[gateNeed]string{anyAdminAPI: msgNotAdminAPI, rootAdminOnly: msgNotAdminAPI, updateProt: msgNotAdminAPI}
	return []gateCaller{
		{"system", flagadmin.System, all, nil},
		{"admin token", flagadmin.AdminToken("admin"), all, nil},
		{"root Admin", userPrincipal(t, store, 1), all, nil},
		{"Editor without a project role", userPrincipal(t, store, 2), map[gateNeed]bool{anyAdminAPI: true}, user},
		{"Editor service account", userPrincipal(t, store, 10), map[gateNeed]bool{anyAdminAPI: true}, user},
		{"Viewer without a project role", userPrincipal(t, store, 3), map[gateNeed]bool{anyAdminAPI: true}, user},
		{"Viewer Member of the project", userPrincipal(t, store, 4), map[gateNeed]bool{anyAdminAPI: true, updateProt: true}, user},
		{"client token", token(flagadmin.TokenClient), nil, none},
		{"frontend token", token(flagadmin.TokenFrontend), nil, none},
	}
}

// gateOp is an operation that acts for a principal, called with
// arguments it accepts from a caller allowed to make it.
type gateOp struct {
	need gateNeed
	call func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error
}

// logGateOp is an operation of the verifiable log (vlog.Service), which
// passes the domain's gate (Service.Authorize), called with arguments it
// accepts from a caller allowed to make it.
type logGateOp struct {
	need gateNeed
	call func(ctx context.Context, log *vlog.Service, p flagadmin.Principal) error
}

// gateSetups prepare the log for the operation of their name, as the
// system, before it is called.
var gateSetups = map[string]func(ctx context.Context, log *vlog.Service) error{
	"ReleaseProject": func(ctx context.Context, log *vlog.Service) error {
		return log.HoldProject(ctx, flagadmin.System, "open")
	},
}

// gateOps are the Service's operations that act for a principal, by
// method name. TestGateCoversEveryOperation keeps it complete.
var gateOps = map[string]gateOp{
	"SearchEvents": {anyAdminAPI, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.SearchEvents(ctx, p, flagadmin.EventSearchParams{})
		return err
	}},
	"DeprecatedSearchEvents": {anyAdminAPI, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.DeprecatedSearchEvents(ctx, p, flagadmin.DeprecatedSearchRequest{})
		return err
	}},
	"ExportEvents": {anyAdminAPI, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.ExportEvents(ctx, p, flagadmin.EventExportParams{})
		return err
	}},
	"StreamEvents": {anyAdminAPI, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.StreamEvents(ctx, p, flagadmin.EventStreamParams{})
		return err
	}},
	"ListProjects": {anyAdminAPI, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.ListProjects(ctx, p, flagadmin.ProjectListOptions{})
		return err
	}},
	"Authorize": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		return svc.Authorize(ctx, p, flagadmin.Access{Need: flagadmin.NeedRootAdmin})
	}},
	"DeleteServiceAccount": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		return svc.DeleteServiceAccount(ctx, p, "10")
	}},
	"ListUsers": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.ListUsers(ctx, p)
		return err
	}},
	"ListAPITokens": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.ListAPITokens(ctx, p)
		return err
	}},
	"RevokeAPIToken": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.RevokeAPIToken(ctx, p, "user:ci")
		return err
	}},
	"CreateUser": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.CreateUser(ctx, p, flagadmin.User{Name: "Nia", Email: "nia@example.com"})
		return err
	}},
	"CreateUserWithToken": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, _, _, err := svc.CreateUserWithToken(ctx, p, flagadmin.User{Name: "Bot", Username: "bot", IsService: true}, flagadmin.NewAPIToken{Name: "bot", Type: flagadmin.TokenUser})
		return err
	}},
	"CreateGroup": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.CreateGroup(ctx, p, flagadmin.Group{Name: "Outsiders"})
		return err
	}},
	"AddGroupMember": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		return svc.AddGroupMember(ctx, p, 1, 3)
	}},
	"CreateProject": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.CreateProject(ctx, p, flagadmin.Project{ID: "new", Name: "New"})
		return err
	}},
	"AddProjectMember": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		user := int64(3)
		return svc.AddProjectMember(ctx, p, "open", flagadmin.ProjectMembership{UserID: &user, Role: flagadmin.ProjectRoleMember})
	}},
	"CreateFeature": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.CreateFeature(ctx, p, flagadmin.Feature{Name: "f-new", Project: "open"})
		return err
	}},
	"CreateAPIToken": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, _, err := svc.CreateAPIToken(ctx, p, flagadmin.NewAPIToken{Name: "deploy", Type: flagadmin.TokenAdmin})
		return err
	}},
	"AuthorizeLifecycle": {updateProt, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.AuthorizeLifecycle(ctx, p, "prot")
		return err
	}},
	"CompleteLifecycle": {updateProt, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		return svc.CompleteLifecycle(ctx, p, "prot", "f-prot", flagadmin.CompleteRequest{Status: flagadmin.StatusKept})
	}},
}

// gateLogOps are the operations of the verifiable log (vlog.Service), by
// method name. TestGateCoversEveryOperation keeps it complete.
var gateLogOps = map[string]logGateOp{
	"Checkpoint": {anyAdminAPI, func(ctx context.Context, log *vlog.Service, p flagadmin.Principal) error {
		_, err := log.Checkpoint(ctx, p)
		return err
	}},
	"InclusionProof": {anyAdminAPI, func(ctx context.Context, log *vlog.Service, p flagadmin.Principal) error {
		_, err := log.InclusionProof(ctx, p, vlog.ProofParams{ID: "1", Size: "1"})
		return err
	}},
	"ConsistencyProof": {anyAdminAPI, func(ctx context.Context, log *vlog.Service, p flagadmin.Principal) error {
		_, err := log.ConsistencyProof(ctx, p, vlog.ConsistencyParams{From: "1", To: "1"})
		return err
	}},
	"Leaves": {rootAdminOnly, func(ctx context.Context, log *vlog.Service, p flagadmin.Principal) error {
		_, err := log.Leaves(ctx, p, vlog.LeavesParams{})
		return err
	}},
	"Holds": {rootAdminOnly, func(ctx context.Context, log *vlog.Service, p flagadmin.Principal) error {
		_, err := log.Holds(ctx, p)
		return err
	}},
	"HoldProject": {rootAdminOnly, func(ctx context.Context, log *vlog.Service, p flagadmin.Principal) error {
		return log.HoldProject(ctx, p, "open")
	}},
	"ReleaseProject": {rootAdminOnly, func(ctx context.Context, log *vlog.Service, p flagadmin.Principal) error {
		return log.ReleaseProject(ctx, p, "open")
	}},
	"RecordRetention": {rootAdminOnly, func(ctx context.Context, log *vlog.Service, p flagadmin.Principal) error {
		_, err := log.RecordRetention(ctx, p, time.Hour)
		return err
	}},
}

// binders are the methods that take a principal to bind it, not to act
// for it: every call through what they return is one of gateAdminOps.
var binders = []string{"As"}

// readRules are the methods that take a principal to apply the
// visibility of reads for an operation that has passed the gate for it
// (an operation of the log): they are not operations.
var readRules = []string{"VisibleQuery", "SearchVisible"}

// gateAdminOps are the operations of Admin, called through Service.As.
// TestGateCoversEveryOperation keeps it complete.
var gateAdminOps = map[string]gateOp{
	"SearchEvents": {anyAdminAPI, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.As(p).SearchEvents(ctx, flagadmin.EventSearchParams{})
		return err
	}},
	"DeprecatedSearchEvents": {anyAdminAPI, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.As(p).DeprecatedSearchEvents(ctx, flagadmin.DeprecatedSearchRequest{})
		return err
	}},
	"ListProjects": {anyAdminAPI, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		_, err := svc.As(p).ListProjects(ctx, flagadmin.ProjectListOptions{})
		return err
	}},
	"DeleteServiceAccount": {rootAdminOnly, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		return svc.As(p).DeleteServiceAccount(ctx, "10")
	}},
	"CompleteLifecycle": {updateProt, func(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) error {
		return svc.As(p).CompleteLifecycle(ctx, "prot", "f-prot", flagadmin.CompleteRequest{Status: flagadmin.StatusKept})
	}},
}

// TestGateCoversEveryOperation checks that gateOps names every exported
// method of Service that takes a Principal (but the binders and the read
// rules), gateAdminOps every method of Admin, and gateLogOps every
// exported method of vlog.Service that takes a Principal: a new operation
// fails here until TestGate checks who may call it.
func TestGateCoversEveryOperation(t *testing.T) {
	svc := reflect.TypeFor[*flagadmin.Service]()
	acting := actingMethods(svc, append(slices.Clone(binders), readRules...))
	compareNames(t, "Service methods that take a Principal", acting, slices.Collect(maps.Keys(gateOps)))
	var admin []string
	for m := range reflect.TypeFor[flagadmin.Admin]().Methods() {
		admin = append(admin, m.Name)
	}
	compareNames(t, "Admin methods", admin, slices.Collect(maps.Keys(gateAdminOps)))
	compareNames(t, "vlog.Service methods that take a Principal", actingMethods(reflect.TypeFor[*vlog.Service](), nil), slices.Collect(maps.Keys(gateLogOps)))
	for _, name := range append(slices.Clone(binders), readRules...) {
		if _, ok := svc.MethodByName(name); !ok {
			t.Errorf("%s is not a method of *Service", name)
		}
	}
}

// actingMethods returns the exported methods of typ that take a
// Principal, but those named in except.
func actingMethods(typ reflect.Type, except []string) []string {
	principal := reflect.TypeFor[flagadmin.Principal]()
	var acting []string
	for m := range typ.Methods() {
		if slices.Contains(slices.Collect(m.Type.Ins()), principal) && !slices.Contains(except, m.Name) {
			acting = append(acting, m.Name)
		}
	}
	return acting
}

// compareNames reports the names missing from table and the entries of
// table that are not among names.
func compareNames(t *testing.T, what string, names, table []string) {
	t.Helper()
	for _, name := range names {
		if !slices.Contains(table, name) {
			t.Errorf("%s: %s is not in the table: add it with the permission it needs", what, name)
		}
	}
	for _, name := range table {
		if !slices.Contains(names, name) {
			t.Errorf("%s: the table has %s, which is not one of them", what, name)
		}
	}
}

// gateCall is one operation of a table of TestGate, called over a service
// and its log.
type gateCall struct {
	need gateNeed
	call func(ctx context.Context, svc *flagadmin.Service, log *vlog.Service, p flagadmin.Principal) error
}

// gateTables returns the operations of gateOps, gateAdminOps and
// gateLogOps, by table and name.
func gateTables() map[string]map[string]gateCall {
	tables := map[string]map[string]gateCall{"Service": {}, "As": {}, "vlog": {}}
	for table, ops := range map[string]map[string]gateOp{"Service": gateOps, "As": gateAdminOps} {
		for name, op := range ops {
			tables[table][name] = gateCall{op.need, func(ctx context.Context, svc *flagadmin.Service, _ *vlog.Service, p flagadmin.Principal) error {
				return op.call(ctx, svc, p)
			}}
		}
	}
	for name, op := range gateLogOps {
		tables["vlog"][name] = gateCall{op.need, func(ctx context.Context, _ *flagadmin.Service, log *vlog.Service, p flagadmin.Principal) error {
			return op.call(ctx, log, p)
		}}
	}
	return tables
}

// TestGate calls every operation that acts for a principal with each kind
// of principal: a caller the gate allows is not refused (the operation
// succeeds), one it does not is refused with ErrNoAccess and the message
// of the rule it fails, before the operation changes anything.
func TestGate(t *testing.T) {
	callers := gateCallers(t)
	for table, ops := range gateTables() {
		for name, op := range ops {
			for _, c := range callers {
				t.Run(table+"/"+name+"/"+c.name, func(t *testing.T) {
					svc, log, store := gateService(t)
					ctx := context.Background()
					if setup := gateSetups[name]; setup != nil {
						if err := setup(ctx, log); err != nil {
							t.Fatalf("setup: %v", err)
						}
					}
					before := len(allEvents(t, store))
					err := op.call(ctx, svc, log, c.p)
					if c.may[op.need] {
						if err != nil {
							t.Fatalf("got %v, want it allowed", err)
						}
						return
					}
					if !errors.Is(err, flagadmin.ErrNoAccess) {
						t.Fatalf("got %v, want ErrNoAccess", err)
					}
					if got, want := err.Error(), c.refusal[op.need]; got != want {
						t.Errorf("got message %q, want %q", got, want)
					}
					if after := len(allEvents(t, store)); after != before {
						t.Errorf("refused, yet the events went from %d to %d", before, after)
					}
				})
			}
		}
	}
}

// gateService returns a service over serviceWorld, its verifiable log
// and a signed checkpoint, so that every operation can succeed.
func gateService(t *testing.T) (*flagadmin.Service, *vlog.Service, *memstore.Store) {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	prover := tlog.NewProver(store)
	svc := flagadmin.NewService(store, fixedClock(testNow))
	log := vlog.NewService(svc, vlog.Config{Store: store, Prover: prover, Signing: true})
	if err := svc.LoadSeed(ctx, strings.NewReader(serviceWorld)); err != nil {
		t.Fatalf("LoadSeed: %v", err)
	}
	signer, err := tlog.NewSigner(store, prover, gateSignerKey(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := signer.Sign(ctx); err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return svc, log, store
}

// gateSignerKey returns the signer key of the test log, made once.
var gateSignerKey = func() func(t *testing.T) string {
	var once sync.Once
	var key string
	var err error
	return func(t *testing.T) string {
		t.Helper()
		once.Do(func() { key, _, err = tlog.GenerateKey("gate.example") })
		if err != nil {
			t.Fatalf("GenerateKey: %v", err)
		}
		return key
	}
}()

// TestGateOncePerOperation reads the sources of the package and of the
// verifiable log's (vlog). Each exported method of *Service that takes a
// Principal (but the binders and the read rules) starts by calling the
// gate and calls it once, or starts by calling one other such method,
// which does (as CompleteLifecycle runs AuthorizeLifecycle). In this
// package the gate is authorize, and only the gate's file refuses with
// ErrNoAccess or asks whether a principal may use the admin API; in vlog
// the gate is the domain's Service.Authorize, and no code names
// ErrNoAccess or asks whether a principal is a root admin. Only those
// methods call the gate (and Authorize, the gate of vlog, calls authorize
// once): no operation decides a permission by hand.
func TestGateOncePerOperation(t *testing.T) {
	except := append(slices.Clone(binders), readRules...)
	checkGateOnce(t, ".", "authorize", except, func(fd *ast.FuncDecl, file string) int {
		if file == "permissions.go" {
			return 0
		}
		return calls(fd.Body, func(n string) bool { return n == "noAccess" || n == "canUseAdminAPI" })
	})
	checkGateOnce(t, "vlog", "Authorize", nil, func(fd *ast.FuncDecl, _ string) int {
		return mentions(fd, func(n string) bool { return n == "ErrNoAccess" || n == "IsRootAdmin" || n == "canUseAdminAPI" })
	})
}

// checkGateOnce checks the rules of TestGateOncePerOperation in the
// package of dir, whose gate is the function or method named gate.
// except are the exported methods of *Service that take a Principal but
// are not operations; byHand counts in a function what decides a
// permission outside the gate.
func checkGateOnce(t *testing.T, dir, gate string, except []string, byHand func(fd *ast.FuncDecl, file string) int) {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var decls []*ast.FuncDecl
	fileOf := map[*ast.FuncDecl]string{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				decls = append(decls, fd)
				fileOf[fd] = filepath.Base(path)
			}
		}
	}
	if len(decls) == 0 {
		t.Fatalf("%s: found no functions", dir)
	}
	acting := map[string]bool{}
	for _, fd := range decls {
		if isServiceMethod(fd) && fd.Name.IsExported() && takesPrincipal(fd) && !slices.Contains(except, fd.Name.Name) {
			acting[fd.Name.Name] = true
		}
	}
	for _, fd := range decls {
		name := fd.Name.Name
		gates := calls(fd.Body, func(n string) bool { return n == gate })
		if n := byHand(fd, fileOf[fd]); n > 0 {
			t.Errorf("%s (%s/%s) decides a permission by hand: only the gate refuses with ErrNoAccess", name, dir, fileOf[fd])
		}
		switch {
		case isServiceMethod(fd) && acting[name]:
			first := fd.Body.List[0]
			viaGate := calls(first, func(n string) bool { return n == gate }) == 1 && gates == 1
			viaOther := gates == 0 && calls(first, func(n string) bool { return acting[n] }) == 1 &&
				calls(fd.Body, func(n string) bool { return acting[n] }) == 1
			if !viaGate && !viaOther {
				t.Errorf("%s (%s) calls the gate %d times and does not start with it (nor with one operation that does)", name, dir, gates)
			}
		case gates > 0 && !(isServiceMethod(fd) && fd.Name.IsExported() && gates == 1):
			t.Errorf("%s (%s/%s) calls the gate %d times: only an operation calls it, once", name, dir, fileOf[fd], gates)
		}
	}
}

// mentions counts the identifiers in fd (names and selected names) that
// are picked.
func mentions(fd *ast.FuncDecl, picked func(string) bool) int {
	count := 0
	ast.Inspect(fd, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && picked(id.Name) {
			count++
		}
		return true
	})
	return count
}

// isServiceMethod reports whether fd is a method of *Service.
func isServiceMethod(fd *ast.FuncDecl) bool {
	if fd.Recv == nil || len(fd.Recv.List) != 1 {
		return false
	}
	star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "Service"
}

// takesPrincipal reports whether one of fd's parameters is a Principal
// (flagadmin.Principal outside the package).
func takesPrincipal(fd *ast.FuncDecl) bool {
	for _, f := range fd.Type.Params.List {
		switch typ := f.Type.(type) {
		case *ast.Ident:
			if typ.Name == "Principal" {
				return true
			}
		case *ast.SelectorExpr:
			if x, ok := typ.X.(*ast.Ident); ok && x.Name == "flagadmin" && typ.Sel.Name == "Principal" {
				return true
			}
		}
	}
	return false
}

// calls counts the calls in n of functions or methods whose name is
// picked.
func calls(n ast.Node, picked func(string) bool) int {
	count := 0
	ast.Inspect(n, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch fn := call.Fun.(type) {
		case *ast.Ident:
			if picked(fn.Name) {
				count++
			}
		case *ast.SelectorExpr:
			if picked(fn.Sel.Name) {
				count++
			}
		}
		return true
	})
	return count
}

// TestReadsWithoutTheGateFailClosed: the reads that operations built over
// the Service make after the gate (VisibleQuery, SearchVisible) show
// nothing to a client or frontend token when a caller forgot the gate;
// they neither panic nor show it public events.
func TestReadsWithoutTheGateFailClosed(t *testing.T) {
	for _, c := range gateCallers(t) {
		if c.may != nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			svc, _, _ := gateService(t)
			q, none, err := svc.VisibleQuery(context.Background(), c.p, flagadmin.EventQuery{Limit: 10})
			if err != nil || !none {
				t.Errorf("VisibleQuery: got %+v, none %v, %v; want none", q, none, err)
			}
			page, err := svc.SearchVisible(context.Background(), c.p, flagadmin.EventQuery{Limit: 10})
			if err != nil || len(page.Events) != 0 || page.Total != 0 {
				t.Errorf("SearchVisible: got %d events (total %d), %v; want none", len(page.Events), page.Total, err)
			}
		})
	}
}
