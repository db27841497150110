package sqlstore

import "testing"

func TestFairShare(t *testing.T) {
	for _, tt := range []struct {
		name    string
		amounts []int64
		budget  int64
		want    int64
	}{
		{name: "no namespaces", budget: 10, want: 0},
		{name: "all fit", amounts: []int64{3, 5, 1}, budget: 10, want: 5},
		{name: "even split", amounts: []int64{10, 10, 10}, budget: 15, want: 5},
		{name: "small ones keep all", amounts: []int64{100, 5, 20}, budget: 30, want: 12},
		{name: "one churner", amounts: []int64{1000, 2, 3}, budget: 100, want: 95},
		{name: "nothing left", amounts: []int64{4, 7}, budget: 0, want: 0},
		{name: "negative budget", amounts: []int64{4, 7}, budget: -3, want: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := FairShare(tt.amounts, tt.budget)
			if got != tt.want {
				t.Errorf("FairShare(%v, %d) = %d, want %d", tt.amounts, tt.budget, got, tt.want)
			}
			var kept int64
			for _, a := range tt.amounts {
				kept += min(a, got)
			}
			if tt.budget >= 0 && kept > tt.budget {
				t.Errorf("the amounts cut to %d sum to %d, over the budget %d", got, kept, tt.budget)
			}
		})
	}
}

func TestByteBudget(t *testing.T) {
	for _, tt := range []struct {
		name                            string
		used, bound, all, cluster, want int64
	}{
		{name: "under a tenth below the bound", used: 80, bound: 100, all: 50, cluster: 50, want: 50},
		// The excess 200-90 = 110 of 200 used, in proportion: 55 of 100,
		// and one more for rounding.
		{name: "one cluster", used: 200, bound: 100, all: 100, cluster: 100, want: 44},
		// 56 of all 100 come from this cluster's 60.
		{name: "two clusters", used: 200, bound: 100, all: 100, cluster: 60, want: 4},
		{name: "more than the cluster has", used: 200, bound: 100, all: 100, cluster: 10, want: 0},
		// 1 TiB of files over a 1 GiB bound: no overflow.
		{name: "large", used: 1 << 40, bound: 1 << 30, all: 1 << 39, cluster: 1 << 39, want: 483183820},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ByteBudget(tt.used, tt.bound, tt.all, tt.cluster); got != tt.want {
				t.Errorf("ByteBudget(%d, %d, %d, %d) = %d, want %d", tt.used, tt.bound, tt.all, tt.cluster, got, tt.want)
			}
		})
	}
}
