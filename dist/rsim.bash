# bash completion for rsim                                    -*- shell-script -*-
# Commands, options per command, scenario files, platform names (from `rsim hw list`),
# operator names (from `rsim ops`) and schema kinds.

_rsim() {
  local cur prev words cword
  _init_completion 2>/dev/null || {
    cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
  }
  local commands="run estimate validate hw ops probe measure plan calibrate import schema"
  if [[ $cword -eq 1 ]]; then
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi
  case $prev in
    --hw-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --platform|-p)
      COMPREPLY=($(compgen -W "$(rsim hw list 2>/dev/null | awk 'NR > 1 && NF > 1 && $1 !~ /^compute/ {print $1}')" -- "$cur") $(compgen -f -X '!*.@(yaml|yml)' -- "$cur"))
      return ;;
    --dtype) COMPREPLY=($(compgen -W "fp64 fp32 tf32 bf16 fp16 fp8 int8 int4" -- "$cur")); return ;;
    --phase) COMPREPLY=($(compgen -W "decode prefill" -- "$cur")); return ;;
    --out|-o)
      if [[ ${words[1]} == probe && $prev == -o ]]; then COMPREPLY=($(compgen -f -- "$cur")); else COMPREPLY=($(compgen -d -- "$cur")); fi
      return ;;
    --json) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --threads|--max-working-set) return ;;
    --scenario) COMPREPLY=($(compgen -f -X '!*.@(yaml|yml)' -- "$cur") $(compgen -d -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "png svg pdf png,svg png,svg,pdf" -- "$cur")); return ;;
    --jobs|-j|--rows|--dpi|--set|--reps|--device) return ;;
    --backend) COMPREPLY=($(compgen -W "onednn torch native" -- "$cur")); return ;;
    --execution) COMPREPLY=($(compgen -W "eager graph eager,graph fused ideal" -- "$cur")); return ;;
  esac
  local cmd=${words[1]}
  if [[ $cur == -* ]]; then
    local opts="--help"
    case $cmd in
      run) opts="--help --out --set --jobs --hw-dir --quiet --rows --format --dpi --no-plots --tables --style" ;;
      estimate) opts="--help --platform --dtype --batch --execution --phase --seq --context --hw-dir" ;;
      validate) opts="--help --hw-dir" ;;
      hw) opts="--help --scenario --hw-dir" ;;
      probe) opts="--help --quick --threads --output --json --out --max-working-set --backend --device" ;;
      measure) opts="--help --platform --reps --cache --out --set --quiet --backend --device --execution --hw-dir" ;;
      plan) opts="--help --output --set --hw-dir" ;;
      calibrate) opts="--help --platform --output --predictions --hw-dir" ;;
      import) opts="--help --input --dim --name --output --summary" ;;
      ops) opts="--help --scenario" ;;
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return
  fi
  case $cmd in
    run|validate)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -X '!*.@(yaml|yml)' -- "$cur") $(compgen -d -- "$cur")) ;;
    estimate)  # a zoo model, an ONNX file or a config.json
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -W "resnet18 resnet34 resnet50 vgg16 mobilenet_v1 mobilenet_v2 mobilenet_v3_small yolov5s gpt2 llama2_7b llama3_8b mixtral_8x7b transformer" -- "$cur")
                 $(compgen -f -X '!*.@(onnx|json)' -- "$cur") $(compgen -d -- "$cur")) ;;
    hw)
      if [[ $cword -eq 2 ]]; then
        COMPREPLY=($(compgen -W "list show" -- "$cur"))
      elif [[ ${words[2]} == show && $cword -eq 3 ]]; then
        COMPREPLY=($(compgen -W "$(rsim hw list 2>/dev/null | awk 'NR > 1 && NF > 1 && $1 !~ /^compute/ {print $1}')" -- "$cur"))
      fi ;;
    ops)
      [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W "$(rsim ops 2>/dev/null | awk '/^  / {print $1}')" -- "$cur")) ;;
    schema)
      [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W "scenario platform" -- "$cur")) ;;
  esac
} && complete -F _rsim rsim
