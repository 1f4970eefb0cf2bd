package localcluster

import (
	"errors"
	"testing"
)

// An error that quotes an ACL rule says no password it adds or removes.
func TestSetUsersErrorsRedactThePasswordsOfItsRules(t *testing.T) {
	rules := []string{"on", ">new-secret", "<old-secret", "~*", ">", "#0b14d501a594442a01c6859541bcb3e8164d183d32937b851835442f69d5c94e", "resetpass"}
	got := passwords(rules)
	if len(got) != 3 || got[0] != "new-secret" || got[1] != "old-secret" || got[2][0] != '0' {
		t.Fatalf("passwords(%q) = %q", rules, got)
	}
	err := Redacted(errors.New("Error in ACL SETUSER modifier '<old-secret': no such password"), got...)
	if want := "Error in ACL SETUSER modifier '<[redacted]': no such password"; err.Error() != want {
		t.Errorf("Redacted = %q, want %q", err, want)
	}
	plain := errors.New("connection refused")
	if Redacted(plain, got...) != plain || Redacted(nil, got...) != nil {
		t.Error("an error without a secret is returned as it was")
	}
}
