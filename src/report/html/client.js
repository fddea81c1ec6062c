// The HTML report's charts, run in the browser: reads the report's data (ReportData in ./data.ts)
// from its JSON script element and draws it with Chart.js (inlined before this script). No
// animation, so a screenshot or a print shows the finished chart at once.
/* global Chart, document */
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var COLORS = { projects: '#2f6fde', snippets: '#d9822b', groups: '#2a9d6f' };
  var palette = ['#2f6fde', '#d9822b', '#2a9d6f', '#8a56c2'];
  Chart.defaults.animation = false;
  Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
  Chart.defaults.maintainAspectRatio = false;

  function clock(seconds) {
    var s = Math.round(seconds);
    var h = Math.floor(s / 3600);
    var m = Math.floor((s % 3600) / 60);
    var r = s % 60;
    var mm = (h > 0 && m < 10 ? '0' : '') + m;
    return (h > 0 ? h + ':' : '') + mm + ':' + (r < 10 ? '0' : '') + r;
  }

  function timeline() {
    var points = data.timeline.points;
    var top = 1;
    points.forEach(function (p) {
      top = Math.max(top, p.inFlight, p.cap || 0);
    });
    top = Math.ceil(top * 1.15);
    var xy = function (field) {
      return points.map(function (p) {
        return { x: p.t, y: p[field] };
      });
    };
    var marks = function (types, y) {
      return data.timeline.markers
        .filter(function (m) {
          return types.indexOf(m.type) >= 0;
        })
        .map(function (m) {
          return { x: m.t, y: y, label: m.label };
        });
    };
    var datasets = [
      {
        label: 'moves in flight',
        data: xy('inFlight'),
        borderColor: '#2f6fde',
        backgroundColor: 'rgba(47,111,222,0.12)',
        fill: 'origin',
        stepped: true,
        pointRadius: 0,
        yAxisID: 'y',
      },
      {
        label: 'cap in force',
        data: points.map(function (p) {
          return { x: p.t, y: p.cap };
        }),
        borderColor: '#5b6475',
        borderDash: [6, 4],
        stepped: true,
        pointRadius: 0,
        yAxisID: 'y',
      },
      {
        label: 'finished per minute',
        data: xy('finishedPerMin'),
        borderColor: '#2a9d6f',
        pointRadius: 0,
        tension: 0.2,
        yAxisID: 'y1',
      },
      {
        label: 'failed per minute',
        data: xy('failedPerMin'),
        borderColor: '#b42318',
        pointRadius: 0,
        tension: 0.2,
        yAxisID: 'y1',
      },
      {
        label: 'paused',
        data: points.map(function (p) {
          return { x: p.t, y: p.paused ? top : null };
        }),
        borderWidth: 0,
        backgroundColor: 'rgba(154,103,0,0.18)',
        fill: 'origin',
        stepped: true,
        pointRadius: 0,
        spanGaps: false,
        yAxisID: 'y',
      },
      {
        type: 'scatter',
        label: 'pause and cap changes',
        data: marks(['paused', 'unpaused', 'cap'], top),
        pointStyle: 'triangle',
        pointRadius: 7,
        clip: false,
        borderColor: '#9a6700',
        backgroundColor: '#9a6700',
        yAxisID: 'y',
      },
      {
        type: 'scatter',
        label: 'run started, resumed, interrupted, finished',
        data: marks(['run.started', 'run.resumed', 'run.interrupted', 'run.finished'], top),
        pointStyle: 'rectRot',
        pointRadius: 6,
        clip: false,
        borderColor: '#1d2330',
        backgroundColor: '#1d2330',
        yAxisID: 'y',
      },
      {
        type: 'scatter',
        label: 'rule holds, Prometheus outages, breaker trips, windows, bounds',
        data: marks(['hold', 'outage', 'breaker', 'window', 'bound'], top),
        pointStyle: 'crossRot',
        pointRadius: 7,
        clip: false,
        borderColor: '#b42318',
        backgroundColor: '#b42318',
        yAxisID: 'y',
      },
      {
        type: 'scatter',
        label: 'steps',
        data: marks(['step'], 0),
        pointStyle: 'circle',
        pointRadius: 3,
        clip: false,
        borderColor: '#8a56c2',
        backgroundColor: '#8a56c2',
        yAxisID: 'y',
      },
    ];
    return new Chart(document.getElementById('timeline'), {
      type: 'line',
      data: { datasets: datasets },
      options: {
        parsing: true,
        layout: { padding: { top: 8 } },
        interaction: { mode: 'nearest', intersect: false },
        scales: {
          x: { type: 'linear', min: 0, title: { display: true, text: 'time since start' }, ticks: { callback: clock } },
          y: { beginAtZero: true, max: top, title: { display: true, text: 'moves in flight' } },
          y1: {
            beginAtZero: true,
            position: 'right',
            grid: { drawOnChartArea: false },
            title: { display: true, text: 'moves per minute' },
          },
        },
        plugins: {
          // Series with nothing to show (no pause, no control change) stay out of the legend.
          legend: {
            labels: {
              filter: function (item, chartData) {
                return chartData.datasets[item.datasetIndex].data.some(function (p) {
                  return p.y !== null;
                });
              },
            },
          },
          tooltip: {
            callbacks: {
              title: function (items) {
                return items.length ? clock(items[0].parsed.x) : '';
              },
              label: function (ctx) {
                return ctx.raw && ctx.raw.label
                  ? ctx.raw.label
                  : ctx.dataset.label + ': ' + Math.round(ctx.parsed.y * 10) / 10;
              },
            },
          },
        },
      },
    });
  }

  function durations() {
    var d = data.durations;
    var kinds = Object.keys(d.byKind);
    var width = d.binSeconds;
    var fmt = function (s) {
      return width < 1 ? s.toFixed(width < 0.1 ? 2 : 1) : String(Math.round(s));
    };
    return new Chart(document.getElementById('durations'), {
      type: 'bar',
      data: {
        labels: d.bins.map(function (b) {
          return fmt(b) + '–' + fmt(b + width) + ' s';
        }),
        datasets: kinds.map(function (k, i) {
          var color = COLORS[k] || palette[i % palette.length];
          return { label: k, data: d.byKind[k], backgroundColor: color, borderColor: color };
        }),
      },
      options: {
        scales: {
          x: { title: { display: true, text: 'move duration' } },
          y: { beginAtZero: true, title: { display: true, text: 'moves' }, ticks: { precision: 0 } },
        },
      },
    });
  }

  timeline();
  durations();
})();
