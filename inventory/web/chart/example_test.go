package chart_test

import (
	"fmt"
	"time"

	"github.com/bomstream/bomstream/inventory/web/chart"
)

func ExampleBars() {
	fmt.Println(chart.Bars("Runtimes", "Serving workloads per runtime.", []chart.Bar{
		{Label: "vllm", Value: 12, Href: "/workloads?runtime=vllm"},
		{Label: "tgi", Value: 3},
	}, 0))
	// Output:
	// <svg xmlns="http://www.w3.org/2000/svg" class="chart chart-bars" role="img" aria-labelledby="chart-7530e951abb3a219-title chart-7530e951abb3a219-desc" viewBox="0 0 720 56" width="100%" fill="currentColor" font-size="12">
	// <title id="chart-7530e951abb3a219-title">Runtimes</title>
	// <desc id="chart-7530e951abb3a219-desc">Serving workloads per runtime.</desc>
	// <a href="/workloads?runtime=vllm"><text class="label" x="226" y="20" text-anchor="end"><title>vllm: 12</title>vllm</text><rect class="bar" x="234" y="8" width="461" height="16"><title>vllm: 12</title></rect><text class="value" x="703" y="20">12</text></a>
	// <g><text class="label" x="226" y="44" text-anchor="end"><title>tgi: 3</title>tgi</text><rect class="bar" x="234" y="32" width="115.25" height="16"><title>tgi: 3</title></rect><text class="value" x="357.25" y="44">3</text></g>
	// </svg>
}

func ExampleDays() {
	day := func(s string) time.Time { t, _ := time.Parse(time.DateOnly, s); return t }
	fmt.Println(chart.Days("Changes", "Changes per day.", []chart.Point{
		{Day: day("2024-05-01"), Value: 2},
		{Day: day("2024-05-03"), Value: 1},
	}))
	// Output:
	// <svg xmlns="http://www.w3.org/2000/svg" class="chart chart-days" role="img" aria-labelledby="chart-5262f837c3896f03-title chart-5262f837c3896f03-desc" viewBox="0 0 720 200" width="100%" fill="currentColor" font-size="12">
	// <title id="chart-5262f837c3896f03-title">Changes</title>
	// <desc id="chart-5262f837c3896f03-desc">Changes per day.</desc>
	// <g class="axis" stroke="currentColor"><line x1="48" y1="16" x2="712" y2="16" stroke-opacity=".35" stroke-dasharray="2 3"/><line x1="48" y1="170" x2="712" y2="170"/></g>
	// <text class="axis" x="42" y="20" text-anchor="end">2</text>
	// <text class="axis" x="42" y="174" text-anchor="end">0</text>
	// <g class="columns">
	// <rect class="bar" x="138.67" y="16" width="40" height="154"><title>2024-05-01: 2 changes</title></rect>
	// <rect class="bar" x="360" y="170" width="40" height="0"><title>2024-05-02: 0 changes</title></rect>
	// <rect class="bar" x="581.33" y="93" width="40" height="77"><title>2024-05-03: 1 change</title></rect>
	// </g>
	// <text class="axis" x="158.67" y="190" text-anchor="middle">2024-05-01</text>
	// <text class="axis" x="380" y="190" text-anchor="middle">2024-05-02</text>
	// <text class="axis" x="601.33" y="190" text-anchor="middle">2024-05-03</text>
	// </svg>
}
