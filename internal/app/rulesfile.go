package app

import (
	"fmt"
	"os"

	"github.com/apollo-platform/apollo/internal/spampede"
)

// seedRules reads the rules file, or returns the default rule set.
func seedRules(path string) (spampede.RuleSet, error) {
	if path == "" {
		return spampede.DefaultRuleSet(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return spampede.RuleSet{}, fmt.Errorf("spampede rules file: %w", err)
	}
	rs, err := spampede.ParseRuleSet(b)
	if err != nil {
		return rs, fmt.Errorf("spampede rules file %s: %w", path, err)
	}
	return rs, nil
}
