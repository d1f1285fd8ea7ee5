package k8s

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// The dev overlay runs oauth2-proxy in the gateway's pod (docs/sso.md): the
// binary from the gateway's own image, settings from a ConfigMap pointing
// at the gateway over loopback, the provider's client and cookie secret
// only from a Secret; the gateway trusts identity headers from loopback
// only, with an admin group; the Service and the NetworkPolicy open the
// proxy's port.
func TestGatewaySSO(t *testing.T) {
	r := render(t)
	d := r.deployments["agent-gateway"]
	if d == nil {
		t.Fatal("no Deployment agent-gateway")
	}
	px, gw := container(t, d, "oauth2-proxy"), container(t, d, "agent-gateway")
	checkHardened(t, d.Name, px)
	if px.Image != gw.Image || !slices.Equal(px.Command, []string{"/oauth2-proxy"}) {
		t.Errorf("oauth2-proxy must run /oauth2-proxy from the gateway's image %q, got %q %v", gw.Image, px.Image, px.Command)
	}
	for _, e := range px.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "oauth2-proxy-oidc" {
			t.Errorf("oauth2-proxy env %s must come from the Secret oauth2-proxy-oidc", e.Name)
		}
	}
	var cfgMap string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "oauth2-proxy-config" && v.ConfigMap != nil {
			cfgMap = v.ConfigMap.Name
		}
	}
	if mountPath(px, "oauth2-proxy-config") != "/etc/oauth2-proxy" || r.configMaps[cfgMap] == nil {
		t.Fatalf("oauth2-proxy-config must be a rendered ConfigMap mounted at /etc/oauth2-proxy (got %q)", cfgMap)
	}
	cfg := r.configMaps[cfgMap].Data["oauth2-proxy.cfg"]
	for _, want := range []string{`upstreams = ["http://127.0.0.1:8080/"]`, `http_address = "0.0.0.0:4180"`, "pass_user_headers = true",
		"skip_auth_strip_headers = true", "cookie_secure = true", `provider = "oidc"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("oauth2-proxy.cfg lacks %s", want)
		}
	}
	if regexp.MustCompile(`(?m)^\s*(client_secret|cookie_secret|client_id)\s*=`).MatchString(cfg) {
		t.Errorf("oauth2-proxy.cfg must not hold the client or cookie secret (they come from the Secret)")
	}
	checkTrustedProxy(t, r)
	svc := r.services["agent-gateway"]
	if svc == nil || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "sso" && p.TargetPort.StrVal == "sso" }) {
		t.Errorf("the Service agent-gateway must expose the proxy's port sso")
	}
	np := r.policies["agent-gateway"]
	if np == nil || len(np.Spec.Ingress) == 0 || !slices.ContainsFunc(np.Spec.Ingress[0].Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.IntValue() == 4180 }) {
		t.Errorf("the gateway's NetworkPolicy must open the proxy's port 4180")
	}
}

// checkTrustedProxy: identity headers only from loopback (the proxy in the
// pod), with an admin group.
func checkTrustedProxy(t *testing.T, r *rendered) {
	t.Helper()
	var gc struct {
		Auth struct {
			TrustedProxy *struct {
				CIDRs       []string `json:"cidrs"`
				UserHeader  string   `json:"userHeader"`
				AdminGroup  string   `json:"adminGroup"`
				AdminGroups []string `json:"adminGroups"`
			} `json:"trustedProxy"`
		} `json:"auth"`
	}
	for name, cm := range r.configMaps {
		if strings.HasPrefix(name, "gateway-config") {
			if err := yaml.Unmarshal([]byte(cm.Data["gateway.yaml"]), &gc); err != nil {
				t.Fatal(err)
			}
		}
	}
	tp := gc.Auth.TrustedProxy
	if tp == nil {
		t.Fatal("gateway.yaml has no auth.trustedProxy")
	}
	for _, c := range tp.CIDRs {
		if c != "127.0.0.1/32" && c != "::1/128" {
			t.Errorf("auth.trustedProxy.cidrs must be loopback only (the proxy in the pod), got %q", c)
		}
	}
	if tp.UserHeader != "X-Forwarded-User" || (tp.AdminGroup == "" && len(tp.AdminGroups) == 0) {
		t.Errorf("auth.trustedProxy: userHeader %q, admin groups %q %v", tp.UserHeader, tp.AdminGroup, tp.AdminGroups)
	}
}

// The gateway image carries oauth2-proxy, built from its wrapper module.
func TestGatewayImageHasOAuth2Proxy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docker", "agent-gateway.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"COPY deploy/k8s/tools/oauth2-proxy/ ./", "github.com/oauth2-proxy/oauth2-proxy/v7", "COPY --from=oauth2-proxy /out/oauth2-proxy /oauth2-proxy"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("agent-gateway.Dockerfile lacks %q", want)
		}
	}
}
