# Random texts for the GGUF vocabulary check: python3 random_texts.py SEED SPECIAL,SPECIAL,... COUNT > texts.jsonl
import random, json, sys
random.seed(int(sys.argv[1])); specials=sys.argv[2].split(',')
pool = ["hello"," world","  ","\n","\n\n","\t"," \n ","123","4567890","3.14","don't","I'M","we'LL","naïve","café","日本語","中文字符","🤖","👍🏽","é","e\u0301","Ωμέγα","Привет","مرحبا","עברית","हिन्दी","ไทย","한국어","x=y+1;","{\"a\":[1,2]}","<br/>","...","!!!","   leading","trailing   ","\u00a0","\u3000","\u200b","ſ","K","\r\n","def f(x):\n    return x","ſt","'s","'S","’s","_","--","\\","ab12cd","A1B2","١٢٣","①②"]
def rnd():
    s=""
    for _ in range(random.randint(0,12)):
        r=random.random()
        if r<0.6: s+=random.choice(pool)
        elif r<0.7: s+=random.choice(specials)
        elif r<0.85: s+=chr(random.choice([random.randint(0x20,0x7e),random.randint(0xa0,0x2fff),random.randint(0x3000,0xd7ff),random.randint(0x1f300,0x1faff)]))
        else: s+=" "*random.randint(1,5)
    return s
for _ in range(int(sys.argv[3])):
    print(json.dumps({"text":rnd()}))
