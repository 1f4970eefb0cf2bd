package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

type goPackage struct {
	ImportPath string
	Name       string
	Doc        string
	Deps       []string
}

func listPackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "github.com/apollo-platform/apollo/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestEveryPackageHasADocComment keeps `go doc` useful: a package says what it provides.
func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range listPackages(t) {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("package %s has no doc comment", p.ImportPath)
		}
	}
}

// TestDomainPackagesStayFreeOfTransportAndStorage guards the layering of
// DESIGN.md: the domain knows neither HTTP nor Redis nor routing.
func TestDomainPackagesStayFreeOfTransportAndStorage(t *testing.T) {
	domain := map[string]bool{"driver": true, "booking": true, "spampede": true, "geocell": true, "dispatch": true}
	forbidden := []string{"net/http", "github.com/redis/", "/internal/redisroute", "/internal/redisstore", "/internal/httpapi"}
	for _, p := range listPackages(t) {
		last := p.ImportPath[strings.LastIndexByte(p.ImportPath, '/')+1:]
		if !domain[last] {
			continue
		}
		for _, d := range p.Deps {
			for _, f := range forbidden {
				if strings.HasPrefix(d, f) || strings.Contains(d, f) && strings.HasPrefix(f, "/") {
					t.Errorf("domain package %s depends on %s", p.ImportPath, d)
				}
			}
		}
	}
}
