/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	variant = name; sub(/.*\//, "", variant)
	key = name; sub(/\/[^\/]*$/, "", key)
	if (!(key in seen)) { seen[key] = 1; order[++n] = key }
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "ns/op" && variant != "paired") { sum[key, variant] += $i; cnt[key, variant]++ }
		if ($(i+1) == "davfs/raw") {
			r = $i; psum[key] += r; pcnt[key]++
			if (!(key in pmin) || r < pmin[key]) pmin[key] = r
			if (!(key in pmax) || r > pmax[key]) pmax[key] = r
		}
	}
}
END {
	printf "| %-34s | %14s | %14s | %6s | %-22s |\n", "benchmark", "davfs ns/op", "raw ns/op", "ratio", "paired ratio mean (min-max)"
	for (j = 1; j <= n; j++) {
		k = order[j]
		d = sum[k, "davfs"] / cnt[k, "davfs"]; r = sum[k, "raw"] / cnt[k, "raw"]
		printf "| %-34s | %14.0f | %14.0f | %6.2f | %.2f (%.2f-%.2f) |\n", k, d, r, d / r, psum[k] / pcnt[k], pmin[k], pmax[k]
	}
}
