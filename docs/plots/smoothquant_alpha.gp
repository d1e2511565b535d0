# The W8A8 output SQNR of the lesson's synthetic layer against SmoothQuant's alpha (lesson 000,
# section 4.4). Data: examples/lesson_smoothquant --csv docs/plots/smoothquant_alpha.csv.
# Drawn by scripts/plot-lesson.sh, which runs gnuplot from the repository root.
set terminal pngcairo size 800,500 font "sans,11" noenhanced
set output "docs/plots/smoothquant_alpha.png"
set datafile separator ","
set title "SmoothQuant on the lesson's synthetic layer: W8A8 output SQNR against alpha"
set xlabel "migration strength alpha"
set ylabel "output SQNR (dB)"
set xrange [-0.02:1.02]
set yrange [25:50]
set xtics 0.1
set grid
set key bottom center

# The lesson's four values (section 4.4), labelled with its digits; the last two columns say where
# each label goes (clear of the curve).
$lesson << END
0,29.15,0.02,27.6
0.5,45.95,0.52,44.4
0.85,42.90,0.87,43.6
1.0,37.72,0.84,36.2
END

plot "docs/plots/smoothquant_alpha.csv" using 1:2 skip 1 with linespoints lw 2 pt 7 ps 0.6 lc rgb "#1f77b4" \
       title "lowbit (lesson_smoothquant, 21 alphas)", \
     $lesson using 1:2 with points pt 6 ps 2.2 lw 2 lc rgb "#d62728" title "the lesson's values", \
     $lesson using 3:4:(sprintf("%.2f dB", $2)) with labels left tc rgb "#d62728" notitle
