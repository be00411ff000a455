package gllim

import "testing"

// The recipe is read from the typed fields, and from the settings of
// files written before them.
func TestTrainingRecipe(t *testing.T) {
	typed := Training{Name: "pose-bb", Box: "canonical", Seed: 7, Settings: map[string]string{"name": "old", "box": "square", "seed": "3"}}
	if n, b, s := typed.Recipe(); n != "pose-bb" || b != "canonical" || s != 7 {
		t.Errorf("typed: %q %q %d", n, b, s)
	}
	old := Training{Settings: map[string]string{"name": "old", "box": "square", "seed": "3"}}
	if n, b, s := old.Recipe(); n != "old" || b != "square" || s != 3 {
		t.Errorf("from settings: %q %q %d", n, b, s)
	}
	if n, b, s := (Training{}).Recipe(); n != "" || b != "" || s != 0 {
		t.Errorf("empty: %q %q %d", n, b, s)
	}
}
